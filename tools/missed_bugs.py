"""Re-make the bugs that the test suite once missed and check that a named test now fails.

    python tools/missed_bugs.py            # every bug; prints caught / MISSED per bug

Each bug is a one-line edit made in a throwaway copy of the working tree; a bug whose line is
no longer in the file (the module was rewritten) is reported as "not applicable" and should
be re-made by hand in the new code.
"""
import os
import shutil
import subprocess
import sys
import tempfile

# (bug, file, original text, buggy text, test that must fail)
BUGS = [
    ("held-out accuracy on the train prompts", "twoclock/models/bandit/dynamics.py",
     'test.z0[None] + jnp.einsum("nkd,td->tnk", test.phi, w_TxD)',
     'train.z0[None] + jnp.einsum("nkd,td->tnk", train.phi, w_TxD)',
     "tests/models/test_bandit_reference.py::test_heldout_accuracy_is_a_direct_evaluation_on_the_heldout_pool"),
    ("emergent-collapse threshold doubled", "twoclock/models/bandit/dynamics.py",
     "peak_T - cfg.collapse_drop - acc_T", "peak_T - 2 * cfg.collapse_drop - acc_T",
     "tests/models/test_bandit_reference.py::test_clocks_are_their_definitions"),
    ("failure_samples summarises the progress array", "twoclock/analysis/results.py",
     '"failure_samples": clocks.summarize(res.fail_n[i, j], idx=idx)',
     '"failure_samples": clocks.summarize(res.prog_n[i, j], idx=idx)',
     "tests/analysis/test_results_values.py::test_entries_summarise_their_own_arrays"),
    ("store folder ignores the configuration key", "twoclock/engine/store.py",
     'f"{model}-{self.key}"', 'f"{model}"',
     "tests/engine/test_store_isolation.py"),
    ("crossing at exactly n_steps reported as never", "twoclock/engine/stages.py",
     "live = ts <= n_total", "live = ts < n_total",
     "tests/engine/test_stages.py::test_crossing_at_the_last_update_is_reported"),
    ("SGD/momentum failure prediction loses (1 - mu)", "twoclock/models/quadratic/drift.py",
     "cfg.drift_threshold * (1.0 - mu) / (float(opt.lr(", "cfg.drift_threshold / (float(opt.lr(",
     "tests/models/test_theory_hand.py -k linear"),
    # since the exact step law, b^2 enters v through g^2's non-centrality (direct sums)
    ("Adam failure prediction loses b^2", "twoclock/models/quadratic/drift.py",
     "G = np.exp(np.sum(_psi(y, mu * mu / (2 * s2)), axis=2))",
     "G = np.exp(np.sum(_psi(y, 0.0 * mu * mu / (2 * s2)), axis=2))",
     "tests/models/test_theory_hand.py -k adam"),
    ("bandit failure prediction ignores E", "twoclock/models/bandit/theory.py",
     "cfg.drift_threshold / (cfg.inner_steps(batch) * step)",
     "cfg.drift_threshold / (cfg.minibatches * step)",
     "tests/models/test_bandit_reference.py -k predicted_failure"),
    ("noise variance c / (2B)", "twoclock/models/quadratic/dynamics.py",
     "cfg.drift_noise, dtype)]) / batch)", "cfg.drift_noise, dtype)]) / (2 * batch))",
     "tests/models/test_quadratic.py::test_gradient_noise_variance_is_c_over_b"),
    # since the keys are computed in NumPy (twoclock/engine/keys.py), the bug is made there
    ("every seed given the same key", "twoclock/engine/keys.py",
     "s_N = np.arange(n_seeds, dtype=np.uint32)",
     "s_N = 0 * np.arange(n_seeds, dtype=np.uint32)",
     "tests/engine/test_stages.py::test_every_seed_has_its_own_noise_stream"),
    ("a 55% CI reported as 95%", "twoclock/analysis/clocks.py",
     "[(1 - level) / 2, (1 + level) / 2], method=",
     "[(1 - 0.55) / 2, (1 + 0.55) / 2], method=",
     "tests/analysis/test_clocks.py::test_median_ci_covers_the_true_median_at_its_level"),
    ("a clip band of 1 + 2 eps", "twoclock/objectives.py",
     "return ClipBand(1 - clip_low, 1 + (clip_low if clip_high is None else clip_high))",
     "return ClipBand(1 - clip_low, 1 + 2 * (clip_low if clip_high is None else clip_high))",
     "tests/test_objectives.py"),
]


def main() -> int:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], check=True,
                           capture_output=True, text=True).stdout.split()
    missed = 0
    with tempfile.TemporaryDirectory(prefix="missed-bugs-") as root:
        for f in files:
            if os.path.isfile(f):
                os.makedirs(os.path.join(root, os.path.dirname(f)), exist_ok=True)
                shutil.copy2(f, os.path.join(root, f))
        for bug, path, old, new, test in BUGS:
            p = os.path.join(root, path)
            src = open(p).read()
            if src.count(old) != 1:
                print(f"not applicable  {bug}: {path} no longer has {old!r}", flush=True)
                continue
            open(p, "w").write(src.replace(old, new))
            try:
                r = subprocess.run(f"{sys.executable} -m pytest -x -q -p no:cacheprovider "
                                   f"-m 'slow or not slow' {test}",
                                   shell=True, cwd=root, capture_output=True, text=True,
                                   env={**os.environ, "PYTHONPATH": root})
            finally:
                open(p, "w").write(src)
            caught = r.returncode == 1
            missed += not caught
            print(f"{'caught' if caught else 'MISSED'}  {bug}  [{test}]  "
                  f"{r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-200:]}",
                  flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
