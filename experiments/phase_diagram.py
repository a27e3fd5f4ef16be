"""Phase diagram over (batch, lr0): `python experiments/phase_diagram.py [--models NAME ...]`.

For each model, sweeps batch x lr0 x seed (sqrt rule by default), colours each cell by the
margin N_fail - N_prog (medians), crosses the cells where most seeds fail first, and draws
the theory's boundary N_fail = N_prog where the model's theory gives one (the quadratic's;
twoclock.studies.phase_study). Each model's grid is its phase default, which lowers the failure
threshold so that the boundary crosses the grid. --seeds, --seed and --n-ckpt apply to every
panel; the grid and model flags need a single --models entry.
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("phase")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
