"""Every command the README shows runs as written: each line of its ```bash blocks is run from the
repository root (a command added to the README is run here without editing this file), figures
on, and must exit 0; every `results/...` file the README names must then have been written by
them."""
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
# a file the README says a command writes: results/ is where every command's default output goes
WRITES = re.compile(r"`(results/[\w./-]+\.\w+)`")


def bash_commands(text: str) -> list:
    """The command lines of text's ```bash blocks, a line ending in a backslash joined to the
    next (as the shell joins them)."""
    out = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        line = ""
        for part in block.splitlines():
            line += part
            if line.endswith("\\"):
                line = line[:-1]
                continue
            if line.strip() and not line.lstrip().startswith("#"):
                out.append(" ".join(line.split()))
            line = ""
    return out


def to_run(command: str) -> str:
    """What this test runs of a README command. A setup line ('python3 -m venv .venv && .
    .venv/bin/activate && pip install ... && CMD') is run from its last `&&` on: this test already
    runs inside the environment that line builds (CI builds it with that very line, .ci/run), and
    building a second one here would test pip and the network, not the project."""
    if "pip install" in command:
        return command.rsplit("&&", 1)[1].strip()
    return command


def _readme() -> str:
    with open(README) as f:
        return f.read()


def test_the_readme_commands_are_found_whole():
    """The extraction itself: the README's blocks as they stand, continuation lines joined."""
    got = bash_commands(_readme())
    assert len(got) >= 3, got
    plan = [c for c in got if "experiments/plan.py --logs" in c]
    assert len(plan) == 2 and plan[0].endswith("--clip clip_frac --predict 512 1024"), plan
    assert plan[1].endswith('"heldout_acc>=0.6 heldout_acc>=0.57 heldout_acc>=0.54" '
                            "--progress-form auto --fit-knee --predict 256 1024"), plan
    assert bash_commands("```bash\na \\\n  b\n# note\n\nc\n```\n```text\nd\n```\n") == ["a b", "c"]
    assert to_run("python3 -m venv .venv && . .venv/bin/activate && pip install -e . && "
                  "python x.py --y") == "python x.py --y"


def test_the_readme_test_command_is_what_ci_runs():
    """The README's test command is the suite that runs this file: running it from here would
    recurse, so it is checked where it runs, as the first line of .ci/run, verbatim."""
    tests = [c for c in bash_commands(_readme()) if to_run(c).startswith("python -m pytest")]
    assert len(tests) == 1, tests
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = [" ".join(line.split()) for line in f]
    assert tests[0] in ci, (tests[0], ci)


def test_every_readme_command_runs_as_written_and_writes_what_it_says():
    text = _readme()
    commands = [to_run(c) for c in bash_commands(text)]
    commands = [c for c in commands if not c.startswith("python -m pytest")]  # see above
    assert commands
    # `python` in a README command is this interpreter (the environment the setup line builds)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ.get("PATH", ""), MPLBACKEND="Agg")
    start = time.time() - 2.0  # file times can lag the clock by a tick
    for cmd in commands:
        done = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, (f"README command exits {done.returncode}: {cmd}\n"
                                      + (done.stdout + done.stderr)[-3000:])
    named = sorted(set(WRITES.findall(text)))
    assert named, "the README names no file its commands write"
    for path in named:
        full = os.path.join(ROOT, path)
        assert os.path.exists(full), f"the README says {path} is written; it is not"
        assert os.path.getmtime(full) >= start, f"{path} is left from an earlier run"
        assert os.path.getsize(full) > 0, path


def python_blocks(text: str) -> list:
    """The README's ```python blocks, each a program a reader may paste as it is."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_every_readme_python_block_runs_as_written():
    blocks = python_blocks(_readme())
    assert blocks, "the README shows no Python"
    assert python_blocks("```python\nx = 1\n```\n```bash\ny\n```\n") == ["x = 1\n"]
    for code in blocks:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                              text=True, timeout=600, env=dict(os.environ, MPLBACKEND="Agg"))
        assert done.returncode == 0, (f"a README Python block exits {done.returncode}:\n{code}\n"
                                      + (done.stdout + done.stderr)[-3000:])
        assert done.stdout.strip(), f"a README Python block printed nothing:\n{code}"
