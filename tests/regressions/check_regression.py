"""Runs one regression program under build/tracejit and checks that what the
compiled function does is what the original does.

Each program (copied unchanged from the differential-testing folder) prints
lines tagged `eager` and lines tagged `compiled`. With the tag word removed
and whitespace collapsed, the compiled lines must equal the eager lines, in
order; untagged lines (what the function itself prints) must come in pairs,
once from each run. The program must exit 0 and print at least one compiled
line (so a run that never compiled cannot pass).

Usage: check_regression.py TRACEJIT_LAUNCHER PROGRAM.py [BACKEND]

With BACKEND, the program's `BACKEND = "..."` line is replaced by that
backend (the program runs from a temporary copy), so one
program checks every backend its comment names.
"""
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

TAG = re.compile(r"\b(eager|compiled)\b:?")


def normalize(line):
    return " ".join(TAG.sub("<run>", line, count=1).split())


def with_backend(program, backend):
    """A copy of `program` whose BACKEND line names `backend`."""
    text = open(program).read()
    text, n = re.subn(r'^BACKEND = "[a-z_]+"', f'BACKEND = "{backend}"', text, count=1, flags=re.M)
    if n != 1:
        sys.exit(f"{program}: no BACKEND line to replace")
    fd, path = tempfile.mkstemp(suffix=".py", prefix=f"tj_regression_{backend}_")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def main():
    launcher, program = sys.argv[1], sys.argv[2]
    backend = sys.argv[3] if len(sys.argv) > 3 else None
    path = with_backend(program, backend) if backend else program
    try:
        run = subprocess.run([launcher, path], capture_output=True, text=True, timeout=240)
    finally:
        if backend:
            os.unlink(path)
    out = run.stdout.splitlines()
    eager, compiled, untagged = [], [], Counter()
    for line in out:
        m = TAG.search(line)
        if not m:
            untagged[line.strip()] += 1
        elif m.group(1) == "eager":
            eager.append(normalize(line))
        else:
            compiled.append(normalize(line))
    problems = []
    if run.returncode != 0:
        problems.append(f"exit status {run.returncode}; stderr:\n{run.stderr[-3000:]}")
    if not compiled:
        problems.append("no line tagged 'compiled'")
    if eager != compiled:
        problems.append("compiled lines differ from eager lines:\n  eager:    " + "\n            ".join(eager) +
                        "\n  compiled: " + "\n            ".join(compiled))
    odd = [line for line, n in untagged.items() if n % 2]
    if odd:
        problems.append(f"untagged lines printed by only one of the runs: {odd}")
    if problems:
        print(f"{program} ({backend or 'its own backend'}):\n" + "\n".join(problems))
        print("full output:\n" + run.stdout)
        sys.exit(1)
    print(f"{program}: {len(compiled)} compiled lines equal to eager")


if __name__ == "__main__":
    main()
