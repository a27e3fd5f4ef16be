"""The engine's flags (not config fields: how a sweep runs, not what it computes), in one
place for every study that offers them, and their checks."""
import os

from twoclock.cli.flags import whole_number
from twoclock.config import require, require_int
from twoclock.engine.layout import CODEGENS
from twoclock.engine.sweep import DEFAULT_MAX_LANES
from twoclock.studies.protocol import Engine

# what jax.distributed.initialize() can read the coordinator, count and index from
CLUSTER_ENV = ("SLURM_JOB_ID", "OMPI_MCA_orte_hnp_uri", "TPU_WORKER_HOSTNAMES",
               "KUBERNETES_SERVICE_HOST")
DISTRIBUTED = ("coordinator", "num_processes", "process_id")


def add_max_lanes(o, default: int | None = None) -> None:
    """--max-lanes: runs per compiled chunk (default: the study's, else the engine's)."""
    o.add_argument("--max-lanes", type=whole_number, default=default,
                   help=f"runs per compiled chunk (default {default or DEFAULT_MAX_LANES}); "
                        "smaller uses less memory")


def add_engine_args(o, max_lanes: int | None = None) -> None:
    """--x64, the store's flags, --max-lanes (default: max_lanes, the study's, else the
    engine's), --codegen and the multi-host flags."""
    o.add_argument("--x64", action="store_true", help="simulate in float64")
    o.add_argument("--store", default=None,
                   help="results store folder (default OUT/store); finished chunks live there")
    o.add_argument("--no-store", action="store_true", help="keep nothing between runs")
    o.add_argument("--resume", action="store_true",
                   help="reuse the finished chunks of an interrupted identical sweep")
    add_max_lanes(o, max_lanes)
    o.add_argument("--codegen", choices=CODEGENS, default="auto",
                   help="XLA's CPU code generator: quick compiles faster and runs slower than "
                        "fused; auto picks quick for a short sweep whose numbers it leaves "
                        "unchanged (default auto)")
    o.add_argument("--distributed", action="store_true",
                   help="call jax.distributed.initialize() first (multi-host runs; on a "
                        "SLURM/TPU/MPI cluster the three flags below are auto-detected)")
    o.add_argument("--coordinator", help="HOST:PORT of process 0 (with --distributed)")
    o.add_argument("--num-processes", type=whole_number,
                   help="number of processes (with --distributed)")
    o.add_argument("--process-id", type=whole_number,
                   help="this process's index (with --distributed)")


def check_distributed(ns) -> None:
    """ValueError unless the distributed flags are coherent."""
    flag = lambda f: "--" + f.replace("_", "-")
    given = [f for f in DISTRIBUTED if getattr(ns, f) is not None]
    if not ns.distributed:
        require(not given, flag(given[0]) if given else "", "given with --distributed",
                getattr(ns, given[0]) if given else None)
        return
    missing = [flag(f) for f in DISTRIBUTED if getattr(ns, f) is None]
    if missing and not any(v in os.environ for v in CLUSTER_ENV):
        raise ValueError(f"--distributed needs {', '.join(missing)} (no SLURM, Open MPI, TPU "
                         "or Kubernetes cluster is detected to supply them)")
    if ns.coordinator is not None:
        host, _, port = ns.coordinator.rpartition(":")
        require(bool(host) and port.isdigit() and 0 < int(port) < 65536, "--coordinator",
                "HOST:PORT with a port in 1..65535", ns.coordinator)
    if ns.num_processes is not None:
        require_int("--num-processes", ns.num_processes)
    if ns.process_id is not None:
        n = ns.num_processes
        require_int("--process-id", ns.process_id, lo=0)
        require(n is None or ns.process_id < n, "--process-id", "in [0, --num-processes)",
                ns.process_id)


def check_engine_args(ns) -> None:
    """ValueError for engine flags that contradict each other or are out of range (of those
    the study offers)."""
    if getattr(ns, "max_lanes", None) is not None:
        require_int("--max-lanes", ns.max_lanes)
    if not hasattr(ns, "no_store"):  # a study that offers --max-lanes alone
        return
    if ns.resume and ns.no_store:
        raise ValueError("--resume reuses chunks from the store: drop --no-store")
    if ns.store and ns.no_store:
        raise ValueError(f"--store {ns.store} and --no-store contradict each other")
    check_distributed(ns)


def engine_from_args(ns, save_ahead=None) -> Engine:
    """The Engine of the parsed flags (a study without engine flags: the store under --out)."""
    store = None if getattr(ns, "no_store", False) else (
        getattr(ns, "store", None) or os.path.join(ns.out, "store"))
    dist = ((ns.coordinator, ns.num_processes, ns.process_id)
            if getattr(ns, "distributed", False) else None)
    return Engine(out=ns.out, store=store, resume=getattr(ns, "resume", False),
                  max_lanes=getattr(ns, "max_lanes", None),
                  codegen=getattr(ns, "codegen", "auto"), x64=getattr(ns, "x64", False),
                  distributed=dist, **({} if save_ahead is None else {"save_ahead": save_ahead}))
