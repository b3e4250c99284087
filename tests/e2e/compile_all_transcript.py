"""Ordinary Python programs print the same transcript under plain
python3.11 and under `tracejit --compile-all` (never wrong, never a crash)."""
import os
import subprocess
import sys

from e2e_util import BACKEND, check, check_equal, finish

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(HERE, "..", "..", "build"))
LAUNCHER = os.path.join(BUILD, "tracejit")

for program in sorted(os.listdir(os.path.join(HERE, "programs"))):
    path = os.path.join(HERE, "programs", program)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    plain = subprocess.run(["/usr/bin/python3.11", path], capture_output=True, text=True, env=env, timeout=300)
    for args in (["--compile-all", "--backend", BACKEND], ["--compile-all", "--backend", BACKEND, "--log", "graph_breaks"]):
        traced = subprocess.run([LAUNCHER, *args, path], capture_output=True, text=True, env=env, timeout=300)
        check_equal(traced.returncode, plain.returncode, f"{program} {' '.join(args)}: exit status")
        check(traced.stdout == plain.stdout,
              f"{program} {' '.join(args)}: same transcript" +
              ("" if traced.stdout == plain.stdout else f"\n--- plain\n{plain.stdout}\n--- traced\n{traced.stdout}\n{traced.stderr[-2000:]}"))
    check(plain.returncode == 0 and plain.stdout.count("\n") >= 3, f"{program}: the program itself runs ({plain.stderr[-300:]})")

finish()
