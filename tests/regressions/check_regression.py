"""Runs one regression program under build/tracejit and checks that what the
compiled function does is what the original does.

Each program (copied unchanged from the differential-testing folder) prints
lines tagged `eager` and lines tagged `compiled`. With the tag word removed
and whitespace collapsed, the compiled lines must equal the eager lines, in
order; untagged lines (what the function itself prints) must come in pairs,
once from each run. The program must exit 0 and print at least one compiled
line (so a run that never compiled cannot pass).

Usage: check_regression.py TRACEJIT_LAUNCHER PROGRAM.py
"""
import re
import subprocess
import sys
from collections import Counter

TAG = re.compile(r"\b(eager|compiled)\b:?")


def normalize(line):
    return " ".join(TAG.sub("<run>", line, count=1).split())


def main():
    launcher, program = sys.argv[1], sys.argv[2]
    run = subprocess.run([launcher, program], capture_output=True, text=True, timeout=240)
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
        print(f"{program}:\n" + "\n".join(problems))
        print("full output:\n" + run.stdout)
        sys.exit(1)
    print(f"{program}: {len(compiled)} compiled lines equal to eager")


if __name__ == "__main__":
    main()
