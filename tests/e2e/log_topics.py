"""Log topics under --compile-all (issue 18, items 22 and 20): frames that
do no tensor work log under `skips`, not `graph_breaks`; `graph_code`
prints no empty graph; `recompiles` names the failing guard with the
expected and the actual value; a frame of pure Python is abandoned by the
trace budget instead of being traced through (its first call stays cheap)."""
import os
import re
import subprocess
import tempfile
import time

from e2e_util import BACKEND, check, check_equal, finish

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(HERE, "..", "..", "build")), "tracejit")

PROGRAM = '''
import argparse
import torch
import tracejit

def setup():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=3)
    print("setting up")                 # a break in a frame with no tensor work
    return p.parse_args([])

def square(i):
    return i * i

def python_only():
    return sum([square(i) for i in range(20000)])

def tensor_fn(x):
    y = x.relu()
    print("tensor_fn", y.shape)         # a break in a frame with tensor work
    return y + 1

@tracejit.compile(dynamic=False)
def sized(x):
    return x * 2

def train_step(model, opt, x):
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    opt.step()
    return loss

def evaluate(model, x, targets, input_lengths, target_lengths):
    model.eval()
    y = model(x).log_softmax(2)
    return torch.nn.functional.ctc_loss(y, targets, input_lengths, target_lengths)

model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_step(model, opt, torch.ones(2, 3))
# (eval() is traced; ctc_loss() with tensor lengths breaks inside the
# library, at aten::ctc_loss.Tensor, which has no meta kernel)
evaluate(torch.nn.Sequential(torch.nn.Linear(3, 5)), torch.ones(12, 2, 3), torch.randint(1, 5, (2, 4)),
         torch.tensor([12, 9]), torch.tensor([4, 3]))
args = setup()
t0 = __import__("time").perf_counter()
python_only()
print("PYTHON_ONLY", __import__("time").perf_counter() - t0)
tensor_fn(torch.ones(3))
sized(torch.ones(1))
sized(torch.ones(2))
'''

with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
    f.write(PROGRAM)
env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
r = subprocess.run([LAUNCHER, "--compile-all", "--backend", BACKEND, "--log",
                    "graph_breaks,graph_code,recompiles,skips", f.name],
                   capture_output=True, text=True, env=env, timeout=300)
os.unlink(f.name)
check_equal(r.returncode, 0, f"the program runs ({r.stderr[-500:]!r})")
lines = r.stderr.splitlines()
breaks = [l for l in lines if l.startswith("[tracejit:graph_breaks]")]
skips = [l for l in lines if l.startswith("[tracejit:skips]")]

check(not any(" setup" in l or "square" in l or "python_only" in l or "listcomp" in l for l in breaks),
      f"graph_breaks names no frame without tensor work: {breaks}")
check(any("tensor_fn" in l and "print" in l for l in breaks), f"graph_breaks reports tensor_fn's break: {breaks}")
check(any(" setup" in l for l in skips), f"skips reports setup: {skips}")
check(any("no tensor work in the first" in l for l in skips), f"skips reports the trace budget: {skips}")

# Break reasons name the user's call of library code, not its internals.
# (opt.step() itself is traced whole since issue 11: no break names it.)
check(not any("opt.step()" in l for l in breaks), f"opt.step() is traced without a break: {breaks}")
check(any("ctc_loss()" in l and "aten::ctc_loss" in l for l in breaks),
      f"graph_breaks names the user's call ctc_loss(): {breaks}")

# graph_code: every printed graph has an op.
text = r.stderr
# (the topic also carries pass notes such as "dce: removing ..."; only graphs count)
blocks = [b for b in text.split("[tracejit:") if b.startswith("graph_code] graph for")]
check(len(blocks) >= 2, f"graph_code printed the graphs ({len(blocks)})")
check(all("aten." in b for b in blocks), f"graph_code prints no empty graph: {[b for b in blocks if 'aten.' not in b]}")

rec = [l for l in lines if l.startswith("[tracejit:recompiles]")]
check(any("size mismatch at index 0: expected 1, actual 2" in l for l in rec),
      f"recompiles names the failing guard with expected and actual values: {rec}")

# The trace budget: a comprehension of 20,000 calls costs about what python3.11 takes.
t = float(r.stdout.split("PYTHON_ONLY")[1].split()[0])
check(t < 1.0, f"first call of a pure-Python comprehension of 20,000 calls: {t * 1e3:.0f} ms (< 1 s)")

# Without a CUDA device the nvrtc backend generates and compiles CUDA kernels
# and runs the graph on the llvm backend's: every graph says so under
# `perf`, and one warning gives the reason. The llvm backend's output_code
# log shows the loop IR and the optimized LLVM IR.
r = subprocess.run([LAUNCHER, "--log", "perf", "-c",
                    "import torch, tracejit; tracejit.compile(lambda x: x.sin() + 1, backend='nvrtc')(torch.ones(2))"],
                   capture_output=True, text=True, timeout=120)
check(r.returncode == 0 and "CUDA kernel(s) compiled to PTX; no CUDA device, the graph runs on the llvm" in r.stderr
      and r.stderr.count("TracejitWarning: tracejit: the nvrtc backend found no CUDA device (") == 1,
      f"the nvrtc backend logs that its kernels do not run on a device: {r.stderr[-300:]!r}")
# The cache-hit path: after 100 calls `perf` says where a hit's time goes.
r = subprocess.run([LAUNCHER, "--log", "perf", "-c",
                    "import torch, tracejit\n"
                    "def f(a, b, c, d): return a + b * c - d\n"
                    "g = tracejit.compile(f, backend='eager'); x = torch.ones(4)\n"
                    "for _ in range(150): g(x, x, x, x)"],
                   capture_output=True, text=True, timeout=120)
hit = re.search(r"\[tracejit:perf\] cache-hit path of f: 100 calls, per call: guards ([0-9.]+) us, "
                r"graph run ([0-9.]+) us, outputs ([0-9.]+) us", r.stderr)
check(r.returncode == 0 and hit is not None and float(hit.group(1)) > 0 and float(hit.group(2)) > 0
      and r.stderr.count("cache-hit path of f") == 1,
      f"perf shows where a cache hit's time goes (guards, graph run, outputs), once by 150 calls: {r.stderr[-400:]!r}")
# Values whose bits a graph reads (view(dtype)) stay ATen's under llvm, and `perf` says so.
r = subprocess.run([LAUNCHER, "--log", "perf", "-c",
                    "import torch, tracejit; tracejit.compile(lambda x: (x.sin() * 2).view(torch.int32), "
                    "backend='llvm')(torch.ones(4))"], capture_output=True, text=True, timeout=120)
check(r.returncode == 0 and "node(s) run as ATen ops, unfused: view(dtype) reads the bits" in r.stderr,
      f"perf names the nodes llvm leaves unfused because their bits are read: {r.stderr[-300:]!r}")
program = "import torch, tracejit; tracejit.compile(lambda x: x.sin() + 1, backend='llvm')(torch.ones(2))"
cache_env = dict(os.environ, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="tracejit_log_cache_"))
r = subprocess.run([LAUNCHER, "--log", "output_code", "-c", program], capture_output=True, text=True, timeout=120,
                   env=cache_env)
check(r.returncode == 0 and "loop IR" in r.stderr and "= sin v" in r.stderr and "define" in r.stderr,
      f"output_code shows the llvm backend's loop IR and LLVM IR: {r.stderr[-300:]!r}")
r = subprocess.run([LAUNCHER, "--log", "output_code", "-c", program], capture_output=True, text=True, timeout=120,
                   env=cache_env)
check(r.returncode == 0 and "= sin v" in r.stderr and "disk cache" in r.stderr,
      f"from the disk cache output_code still shows the loop IR: {r.stderr[-300:]!r}")
finish()
