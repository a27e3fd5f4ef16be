#!/bin/bash
# A sample SLURM job: the headline sweep on 2 nodes, one process per node using all of its GPUs.
# JAX reads the coordinator, the process count and each process's index from SLURM's
# environment, so `--distributed` needs no other flag here. Submit from the repository root:
#   sbatch docs/slurm_critical_batch.sh --seeds 256
# Extra arguments go to experiments/critical_batch.py.
#SBATCH --job-name=twoclock
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --time=02:00:00
#SBATCH --requeue
#SBATCH --output=twoclock-%j.out
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:?submit with sbatch}"
. .venv/bin/activate

# Results and the store must be on a file system that every node sees (process 0 writes them).
OUT="${TWOCLOCK_OUT:-$SLURM_SUBMIT_DIR/results}"

# --resume: a requeued or restarted job continues from the finished chunks in OUT/store instead
# of recomputing them (a chunk that fails its checks is recomputed).
srun python experiments/critical_batch.py --distributed --out "$OUT" --resume "$@"
