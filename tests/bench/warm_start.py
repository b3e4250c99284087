"""Warm start, measured (issue 44, goal of item 4): the first compiled call
of a workload in a second process, whose graph cache and kernel cache the
first process filled, against eager's first call in a fresh python3.11.

Workloads: the e2e MLP's training step (tests/e2e/graph_disk_cache.py's:
8-32-32-4, cross entropy, SGD, batch 16) and resnet18 inference
(1x3x224x224, no_grad; skipped without torchvision). For each: one process
fills a fresh cache directory, then REPEAT rounds each run eager in
python3.11 and the compiled workload under the launcher. Printed: the median
and best first-call times, wall and CPU (process time: on a shared machine
the wall time of a multi-millisecond call depends on the other processes;
CPU time much less), their ratio, and the warm processes' counters. The
goal: kernels_compiled == 0 and aot_captures == 0 in every warm process
(exit 1 otherwise) and the first call <= 1.5x eager's (reported, not
enforced: timings are no test here).
Usage: warm_start.py [--quick] [build/tracejit]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

PYTHON = "/usr/bin/python3.11"
QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 7
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACEJIT = os.path.abspath(ARGS[0]) if ARGS else os.path.join(ROOT, "build", "tracejit")

CHILD = r"""
import json, sys, time
import torch
compiled = sys.argv[1] == "compiled"
if compiled:
    import tracejit
WORKLOAD
c0, t0 = time.process_time(), time.perf_counter()
run()
t1, c1 = time.perf_counter(), time.process_time()
out = {"wall_ms": (t1 - t0) * 1e3, "cpu_ms": (c1 - c0) * 1e3}
if compiled:
    c = tracejit.counters()
    out.update({k: c[k] for k in ("kernels_compiled", "aot_captures", "graph_cache_hits")})
print("RESULT " + json.dumps(out))
"""

WORKLOADS = {
    "mlp_training_step": """
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
opt = torch.optim.SGD(mlp.parameters(), lr=0.1)
def train_step(x, y):
    opt.zero_grad()
    loss = F.cross_entropy(mlp(x), y)
    loss.backward()
    opt.step()
    return loss
x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
step = tracejit.compile(train_step) if compiled else train_step
run = lambda: step(x, y)
""",
    "resnet18_inference": """
import torchvision
torch.manual_seed(0)
model = torchvision.models.resnet18().eval()
x = torch.randn(1, 3, 224, 224)
fn = tracejit.compile(model) if compiled else model
def run():
    with torch.no_grad():
        return fn(x)
""",
}


def once(cmd, env):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    line = next((l for l in out.stdout.splitlines() if l.startswith("RESULT ")), None)
    if out.returncode != 0 or line is None:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return json.loads(line[len("RESULT "):])


def summary(runs, key):
    values = sorted(r[key] for r in runs)
    return statistics.median(values), values[0]


def main():
    has_torchvision = subprocess.run([PYTHON, "-c", "import torchvision"], capture_output=True).returncode == 0
    names = list(WORKLOADS) if has_torchvision else ["mlp_training_step"]
    print("first call in a second process (graph and kernel caches warm) vs eager's first call; "
          f"median / best of {REPEAT}")
    failed = []
    for name in names:
        cache = tempfile.mkdtemp(prefix="tracejit_warm_start_")
        env = dict(os.environ, TRACEJIT_CACHE_DIR=cache, TRACEJIT_GRAPH_CACHE="1")
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's python keeps its .pyc files
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(CHILD.replace("WORKLOAD", WORKLOADS[name]))
            path = f.name
        try:
            once([TRACEJIT, path, "compiled"], env)  # fills the caches
            eager, warm = [], []
            for _ in range(REPEAT):
                eager.append(once([PYTHON, path, "eager"], env))
                warm.append(once([TRACEJIT, path, "compiled"], env))
        finally:
            os.unlink(path)
            shutil.rmtree(cache, ignore_errors=True)
        counters = {k: sorted({r[k] for r in warm}) for k in ("kernels_compiled", "aot_captures", "graph_cache_hits")}
        if counters["kernels_compiled"] != [0] or counters["aot_captures"] != [0]:
            failed.append(name)
        for key in ("wall_ms", "cpu_ms"):
            (em, eb), (wm, wb) = summary(eager, key), summary(warm, key)
            print(f"{name:20} {key[:-3]:4}  eager {em:8.1f} / {eb:8.1f} ms   tracejit {wm:8.1f} / {wb:8.1f} ms   "
                  f"ratio {wm / em:5.2f}x / {wb / eb:5.2f}x")
        print(f"{name:20} warm counters {counters}")
    if failed:
        print(f"a warm process compiled kernels or captured graphs: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
