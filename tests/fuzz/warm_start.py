"""A regression program with the graph cache on, cold then warm (two
processes sharing a fresh TRACEJIT_CACHE_DIR): the warm process reads the
compiled graphs back from their text, so everything the first process laid
out must come back the same. Found by round 14's campaign (which runs with
the cache on): the text printed no stride for a size-1 dim (`f64[3, 1, 4]`
for strides (4, 1, 1)), so llvm laid out the warm start's saved `x0 + 1`
densely and `regressions/aot_computed_grad_stride_of_size1_dim`'s gradient
came back with another stride on its size-1 dim.
Usage: launcher warm_start.py PROGRAM BACKENDS"""
import os
import subprocess
import sys
import tempfile

LAUNCHER = os.readlink("/proc/self/exe")
HERE = os.path.dirname(os.path.abspath(__file__))
program, backends = sys.argv[1], sys.argv[2]
failed = False
with tempfile.TemporaryDirectory(prefix="tj-warm-") as cache:
    env = dict(os.environ, TRACEJIT_GRAPH_CACHE="1", TRACEJIT_CACHE_DIR=cache)
    for run in ("cold", "warm"):
        entries = sum(len(files) for _, _, files in os.walk(cache))
        r = subprocess.run([LAUNCHER, os.path.join(HERE, "runner.py"), "--check", program, "--backend", backends],
                           env=env, capture_output=True, text=True, timeout=600)
        print(f"--- {run} start ({entries} cache files before) rc={r.returncode}\n{r.stdout}{r.stderr}")
        if r.returncode != 0:
            failed = True
        if run == "cold" and sum(len(files) for _, _, files in os.walk(cache)) == 0:
            print("FAIL: the cold start wrote no cache entry (the warm start would not be warm)")
            failed = True
print("FAIL" if failed else "PASS")
sys.exit(1 if failed else 0)
