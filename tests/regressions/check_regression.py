"""Runs one regression program under build/tracejit and checks that what the
compiled function does is what the original does.

Each program (copied unchanged from the differential-testing folder) prints
lines tagged `eager` and lines tagged `compiled`. With the tag word removed
and whitespace collapsed, the compiled lines must equal the eager lines, in
order; untagged lines (what the function itself prints) must come in pairs,
once from each run. The program must exit 0 and print at least one compiled
line (so a run that never compiled cannot pass).

Usage: check_regression.py TRACEJIT_LAUNCHER PROGRAM.py [BACKEND]
       check_regression.py TRACEJIT_LAUNCHER --many PROGRAM.py[@BACKEND]...

With BACKEND, the program's `BACKEND = "..."` line is replaced by that
backend (the program runs from a temporary copy), so one
program checks every backend its comment names. With --many, the programs
run one after the other in one launcher (run_programs.py: each as __main__
in a fresh namespace, stdout captured, tracejit.reset() between) and each
is checked as above; the exit status is 1 when any fails.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

TAG = re.compile(r"\b(eager|compiled)\b:?")


def normalize(line):
    return " ".join(TAG.sub("<run>", line, count=1).split())


def text_with_backend(program, backend):
    """The text of `program` with its BACKEND line naming `backend`."""
    text = open(program).read()
    text, n = re.subn(r'^BACKEND = "[a-z_]+"', f'BACKEND = "{backend}"', text, count=1, flags=re.M)
    if n != 1:
        sys.exit(f"{program}: no BACKEND line to replace")
    return text


def with_backend(program, backend):
    """A copy of `program` whose BACKEND line names `backend`."""
    text = text_with_backend(program, backend)
    fd, path = tempfile.mkstemp(suffix=".py", prefix=f"tj_regression_{backend}_")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def problems_of(returncode, stdout, stderr):
    """(problems, compiled lines) of one run of a program: no problem when its compiled lines are its eager lines."""
    eager, compiled, untagged = [], [], Counter()
    for line in stdout.splitlines():
        m = TAG.search(line)
        if not m:
            untagged[line.strip()] += 1
        elif m.group(1) == "eager":
            eager.append(normalize(line))
        else:
            compiled.append(normalize(line))
    problems = []
    if returncode != 0:
        problems.append(f"exit status {returncode}; stderr:\n{stderr[-3000:]}")
    if not compiled:
        problems.append("no line tagged 'compiled'")
    if eager != compiled:
        problems.append("compiled lines differ from eager lines:\n  eager:    " + "\n            ".join(eager) +
                        "\n  compiled: " + "\n            ".join(compiled))
    odd = [line for line, n in untagged.items() if n % 2]
    if odd:
        problems.append(f"untagged lines printed by only one of the runs: {odd}")
    return problems, len(compiled)


def report(program, backend, checked, stdout):
    """Prints the outcome of one program (problems_of's `checked`); True when it passed."""
    problems, compiled = checked
    if problems:
        print(f"{program} ({backend or 'its own backend'}):\n" + "\n".join(problems))
        print("full output:\n" + stdout)
        return False
    print(f"{program}{' (' + backend + ')' if backend else ''}: {compiled} compiled lines equal to eager")
    return True


def check_many(launcher, runs):
    """Every PROGRAM[@BACKEND] of `runs` in one launcher (run_programs.py): each checked as a run of its own."""
    driver = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_programs.py")
    run = subprocess.run([launcher, driver, *runs], capture_output=True, text=True, timeout=240 * len(runs))
    results = [json.loads(line[len("RESULT "):]) for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    failed = [r["program"] + (f"@{r['backend']}" if r["backend"] else "") for r in results
              if not report(r["program"], r["backend"], problems_of(r["status"], r["stdout"], run.stderr), r["stdout"])]
    passed = len(results) - len(failed)
    if len(results) < len(runs) or run.returncode != 0:
        failed.append(f"the launcher stopped after {len(results)} of {len(runs)} programs (exit {run.returncode}); "
                      f"stderr:\n{run.stderr[-3000:]}")
    print(f"{passed} of {len(runs)} programs pass" + "".join(f"\n  failed: {f}" for f in failed))
    sys.exit(1 if failed else 0)


def main():
    launcher = sys.argv[1]
    if sys.argv[2] == "--many":
        check_many(launcher, sys.argv[3:])
    program = sys.argv[2]
    backend = sys.argv[3] if len(sys.argv) > 3 else None
    path = with_backend(program, backend) if backend else program
    try:
        run = subprocess.run([launcher, path], capture_output=True, text=True, timeout=240)
    finally:
        if backend:
            os.unlink(path)
    if not report(program, backend, problems_of(run.returncode, run.stdout, run.stderr), run.stdout):
        sys.exit(1)


if __name__ == "__main__":
    main()
