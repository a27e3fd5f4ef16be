"""From a few pilot runs to a plan: fit both clocks against batch and recommend a batch."""
