"""The regime map of the drift-threshold hypothesis: `python experiments/regime_map.py
[--cells 0.1 ...] [--quick]`.

Each difficulty level's cell is a sweep through the engine, resumable from the store under
--out/store, and written to --out/regime_map_cells/ as it finishes; prints the map beside the
pre-registered predictions and writes regime_map.json (and its figure) to --out.
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("regime_map")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
