"""Two shapes of a real GRPO sweep in each model: `python experiments/shapes.py`.

The critical batch against the target (sqrt rule) and the fixed-lr exponent against batch,
each beside Adam's noise-scale theory (docs/shapes.md). Each model's two cells run through the
engine, resumable from the store under --store; writes shapes.json (and its figure) to --out.
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("shapes")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
