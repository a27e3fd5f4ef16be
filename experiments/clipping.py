"""The source article's three clipping claims on the RLVR bandit: `python experiments/clipping.py`.

(a) clipping delays the failure clock, more at the largest batch; (b) without clipping the
progress gap remains; (c) a wider clip learns faster early and fails earlier. Defaults: the
emergent-drift regime (the bandit's `emergent` preset: M = 4 minibatches x E = 2 epochs,
where clipping binds), B = 64 and 1024, eps 0.1 ... 0.5 and none, 16 seeds.
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("clipping")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
