"""Wall-clock time to target against batch: `python experiments/time_to_target.py [flags]`.

The quadratic model's samples to target (sqrt-scaled and fixed learning rate) divided by the
end-to-end throughput of an RLVR step (twoclock.analysis.throughput), normalised to the smallest
batch with the first rule (twoclock.studies.time_to_target). Marks the critical generation
batch (throughput knee) and the critical training batch (where samples to target grow by
1 + delta), and stars the optimum. A run whose failure clock fires before its target counts
as never reaching it. One simulated sample stands for 32 responses.
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("time_to_target")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
