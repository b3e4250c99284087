"""check_regression.py --many fails when one of its programs does and names
it, while the others still pass: one launcher runs a program whose compiled
line differs from its eager line (written here), a program that raises, and
a fixed regression program that must pass.
Usage: check_many_self_test.py TRACEJIT_LAUNCHER   (run by /usr/bin/python3.11)"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
launcher = sys.argv[1]
failures = []
with tempfile.TemporaryDirectory() as tmp:
    differs = os.path.join(tmp, "differs.py")
    with open(differs, "w") as f:
        f.write('print("eager", 1)\nprint("compiled", 2)\n')
    raises = os.path.join(tmp, "raises.py")
    with open(raises, "w") as f:
        f.write('print("eager", 1)\nprint("compiled", 1)\nraise ValueError("boom")\n')
    good = os.path.join(HERE, "01_stride_subscript.py")
    r = subprocess.run([sys.executable, os.path.join(HERE, "check_regression.py"), launcher, "--many",
                        differs, good, raises], capture_output=True, text=True, timeout=600)
out = r.stdout
for ok, what in [(r.returncode == 1, f"exit status 1 (got {r.returncode})"),
                 ("failed: " + differs in out, "the differing program is named"),
                 ("failed: " + raises in out, "the raising program is named"),
                 ("exit status 1; stderr:" in out and "ValueError: boom" in out, "the raise is reported"),
                 (f"{good}: " in out and "compiled lines equal to eager" in out, "the fixed program passes"),
                 ("1 of 3 programs pass" in out, "one of three counted as passing")]:
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)
if failures:
    print(out[-4000:], r.stderr[-2000:])
sys.exit(1 if failures else 0)
