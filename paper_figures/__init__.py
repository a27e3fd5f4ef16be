"""Regenerate every paper figure from cached result JSON: `python -m paper_figures`."""
