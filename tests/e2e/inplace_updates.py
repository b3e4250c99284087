"""Graphs that write their inputs in place, as an optimizer's step does:
values, identities, views and version counters as eager leaves them, on
every backend. Under no_grad the functional backends compile the step for
inference (no fallback op by op, even though the parameters require grad);
the llvm backend writes a kernel's result straight into the input AOT would
copy it into when nothing reads the old value afterwards (the output_code
log says `into in<k>`; the counter `kernels_written_in_place` counts those
stores per call). When an op that can fail on the data runs after the
first write, the write is left to the end, so that a failure can be undone
and the frame rerun as eager's bytecode."""
import os
import subprocess

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish

EXACT = BACKEND in ("eager", "aot_eager")


def close(a, b):
    return torch.equal(a, b) if EXACT else torch.allclose(a, b, rtol=1e-6, atol=1e-6)


def momentum_step(p, g, buf):
    with torch.no_grad():
        buf.mul_(0.9).add_(g)
        p.add_(buf, alpha=-0.1)


def state_and_old_value(x, y):
    with torch.no_grad():
        old = x.clone()
        x.mul_(2).add_(y)
        return old.sum(dim=1) + x.amax(dim=1)


def write_then_index(x, idx):
    x.add_(1)
    return x[idx]


def write_then_int_division(x, n, d):
    x.mul_(3)
    return n // d


def fresh(seed):
    torch.manual_seed(seed)
    p = torch.randn(64, 33, requires_grad=True)
    g = torch.randn(64, 33)
    buf = torch.randn(64, 33)
    return p, g, buf


# 1. a momentum step: the parameter (requires grad) and the buffer written in place
tracejit.reset()
step = tracejit.compile(momentum_step, backend=BACKEND)
want = fresh(0)
got = fresh(0)
ptrs = [t.data_ptr() for t in got]
view = got[2].view(-1)  # a view of the buffer sees the writes
for _ in range(3):
    momentum_step(*want)
    step(*got)
for name, a, b in zip(("parameter", "gradient", "buffer"), want, got):
    # bit for bit on every backend: llvm's add with alpha is ATen's fmadd
    check(torch.equal(a, b), f"momentum step: {name} equals eager bit for bit after 3 steps")
    check_equal(b._version, a._version, f"momentum step: {name}'s version counter")
check_equal([t.data_ptr() for t in got], ptrs, "momentum step: every tensor keeps its memory")
check(torch.equal(view, got[2].view(-1)), "momentum step: a view of the buffer sees the new values")
check(got[0].is_leaf and got[0].requires_grad and got[0].grad_fn is None, "momentum step: the parameter is still a leaf")
counters = tracejit.counters()
check_equal(counters["backend_fallbacks"], 0, "momentum step: compiled by the backend, not run op by op")
check_equal(counters["frames_traced"], 1, "momentum step: one trace for 3 calls")
if BACKEND == "llvm":
    # per call, the kernel outputs stored straight into an input: the buffer and the parameter
    check_equal(counters["kernels_written_in_place"], 6, "momentum step: llvm writes 2 inputs in place on each of 3 calls")
check_equal(counters["inplace_dense_fallbacks"], 0, "momentum step: no input written in place was found not dense")

# 2. the old value read after the write (a clone, then a reduction of the new value)
tracejit.reset()
fn = tracejit.compile(state_and_old_value, backend=BACKEND)
torch.manual_seed(1)
xa, y = torch.randn(16, 40), torch.randn(40)
xb = xa.clone()
for _ in range(2):
    a, b = state_and_old_value(xa, y), fn(xb, y)
    check(close(a, b), "old value and new value: the result equals eager")
    check(close(xa, xb), "old value and new value: the input equals eager")

# 3. a transposed input written in place (not one dense block in row order)
tracejit.reset()
fn = tracejit.compile(lambda x, y: x.mul_(y).add_(1), backend=BACKEND)
base_a, base_b = torch.randn(12, 9), None
base_b = base_a.clone()
ya = torch.randn(12)
out = fn(base_b.t(), ya)
base_a.t().mul_(ya).add_(1)
check(close(base_a, base_b), "transposed input: written as eager writes it")
check(out.data_ptr() == base_b.data_ptr(), "transposed input: the result is the input itself")
# the kernel writes only inputs that are dense in row order when compiled (this one
# gets AOT's copy), and the guards keep every later call's strides: nothing ever
# falls back op by op for a donated input that is not dense (tests/unit/jit covers that path)
counters = tracejit.counters()
check_equal((counters["kernels_written_in_place"], counters["inplace_dense_fallbacks"]), (0, 0),
            "transposed input: not written in place by a kernel, no dense fallback")

# 4. an op that can fail on the data after the write: a failing call is undone and
#    rerun as eager's bytecode, which writes once and raises eager's error
tracejit.reset()
fn = tracejit.compile(write_then_index, backend=BACKEND)
x = torch.zeros(8)
fn(x, torch.tensor([1, 2]))
check(torch.equal(x, torch.ones(8)), "write then index: the first call writes once")
check_raises(IndexError, lambda: fn(x, torch.tensor([3, 99])), "write then index: an index out of range raises")
check(torch.equal(x, torch.full((8,), 2.0)), "write then index: the failing call wrote once, as eager")

tracejit.reset()
fn = tracejit.compile(write_then_int_division, backend=BACKEND)
x = torch.ones(5)
n = torch.tensor([6, 8])
check(torch.equal(fn(x, n, torch.tensor([3, 2])), torch.tensor([2, 4])), "write then int division: the result")
check_raises(RuntimeError, lambda: fn(x, n, torch.tensor([0, 2])), "write then int division: by zero raises")
check(torch.equal(x, torch.full((5,), 9.0)), "write then int division: the failing call wrote once, as eager")

# 6. the same step over changing sizes: after three captures one AOT graph
#    (captured for inference though the parameter requires grad) serves the rest
tracejit.reset()
step = tracejit.compile(momentum_step, backend=BACKEND)
same = True
for n in (8, 12, 16, 20, 24, 28):
    torch.manual_seed(n)
    want = (torch.randn(n, 33, requires_grad=True), torch.randn(n, 33), torch.randn(n, 33))
    got = (want[0].detach().clone().requires_grad_(), want[1], want[2].clone())
    for _ in range(2):
        momentum_step(*want)
        step(*got)
    same = same and torch.equal(want[0], got[0]) and torch.equal(want[2], got[2])
check(same, "momentum step over 6 sizes: bit for bit")
if BACKEND != "eager":
    reuses = tracejit.counters()["aot_size_reuses"]
    check(reuses >= 1, f"momentum step over 6 sizes: sizes served by the AOT size template ({reuses})")

# 5. the llvm backend writes the kernel's result into the input
if BACKEND == "llvm":
    launcher = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", "build"), "tracejit")
    script = ("import torch, tracejit\n"
              "p, g, b = torch.randn(64, 33, requires_grad=True), torch.randn(64, 33), torch.randn(64, 33)\n"
              "def step(p, g, b):\n"
              "    with torch.no_grad():\n"
              "        b.mul_(0.9).add_(g)\n"
              "        p.add_(b, alpha=-0.1)\n"
              "tracejit.compile(step, backend='llvm')(p, g, b)\n")
    r = subprocess.run([launcher, "--log", "output_code", "-c", script], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and r.stderr.count(" into in") == 2,
          f"llvm: the buffer and the parameter are written in place by the kernel: {r.stderr[-600:]!r}")

finish()
