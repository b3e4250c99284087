"""Guards and recompilation: a new shape, dtype, requires_grad, a changed
global constant or grad mode each fail a guard and recompile once; what was
compiled before still hits the cache; results always match eager. The
--log recompiles and --log guards topics say why."""
import os
import subprocess
import sys

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

K = 2.0


def fn(x):
    y = x * K + 1
    if x.shape[0] > 3:
        y = y.relu()
    return torch.sin(y).sum(0)


def counters_delta(before):
    now = tracejit.counters()
    return {k: now[k] - before[k] for k in now}


def call(compiled, x, what, want_retrace, want_hit):
    """Calls compiled(x) and checks the result and what the call did."""
    before = tracejit.counters()
    got = compiled(x)
    want = fn(x)
    d = counters_delta(before)
    check(torch.allclose(got, want, atol=1e-6), f"{what}: matches eager")
    check_equal((d["frames_traced"], d["recompiles"], d["cache_hits"]),
                (1 if want_retrace else 0, 1 if want_retrace else 0, 1 if want_hit else 0),
                f"{what}: (traced, recompiles, cache_hits) of the call")
    return got


tracejit.reset()
compiled = tracejit.compile(fn, backend=BACKEND)
torch.manual_seed(0)
x34 = torch.randn(3, 4)
x54 = torch.randn(5, 4)

before = tracejit.counters()
compiled(x34)
d = counters_delta(before)
check_equal((d["frames_traced"], d["graphs_compiled"], d["recompiles"]), (1, 1, 0), "first call compiles, no recompile")
call(compiled, torch.randn(3, 4), "same shape, new values", False, True)

# A new shape: exactly one recompile; both shapes then hit the cache.
call(compiled, x54, "new shape", True, False)
check_equal(tracejit.counters()["recompiles"], 1, "recompiles == 1 after the new shape")
call(compiled, x34, "old shape again", False, True)
call(compiled, x54, "new shape again", False, True)
check_equal(tracejit.counters()["recompiles"], 1, "still recompiles == 1")

# dtype.
call(compiled, x34.double(), "float64 input", True, False)
call(compiled, x34.double(), "float64 input again", False, True)

# requires_grad: a new graph, and gradients flow through it like eager.
xg = x34.clone().requires_grad_()
out = call(compiled, xg, "requires_grad input", True, False)
check(out.requires_grad, "requires_grad input: the output requires grad")
out.sum().backward()
xe = x34.clone().requires_grad_()
fn(xe).sum().backward()
check(xg.grad is not None and torch.allclose(xg.grad, xe.grad, atol=1e-6), "requires_grad input: gradient matches eager")
call(compiled, x34.clone().requires_grad_(), "requires_grad input again", False, True)

# Grad mode.
with torch.no_grad():
    out = call(compiled, x34, "under torch.no_grad()", True, False)
    out = call(compiled, x34, "under torch.no_grad() again", False, True)
call(compiled, x34, "grad mode back on: the first graph", False, True)

# A global constant the function reads.
K = 3.0
call(compiled, x34, "changed global constant", True, False)
check(torch.allclose(compiled(x34), torch.sin(x34 * 3.0 + 1).sum(0)), "changed global constant: the new value is used")
K = 2.0
call(compiled, x34, "global constant restored: the first graph", False, True)

c = tracejit.counters()
check_equal(c["graph_breaks"], 0, "no graph break anywhere")
check_equal(c["recompiles"], 5, "recompiles: shape, dtype, requires_grad, grad mode, global")
check(c["guard_failures"] >= c["recompiles"], "guard_failures >= recompiles")

# reset forgets everything.
tracejit.reset()
check_equal(set(tracejit.counters().values()), {0}, "reset zeroes the counters")
before = tracejit.counters()
compiled(x34)
d = counters_delta(before)
check_equal((d["frames_traced"], d["recompiles"], d["cache_hits"]), (1, 0, 0),
            "after reset: traced afresh (not a recompile)")

# dynamic=False specializes every shape: each new shape is a recompile.
tracejit.reset()
static = tracejit.compile(fn, backend=BACKEND, dynamic=False)
for n in (2, 4, 6):
    static(torch.randn(n, 4))
check_equal(tracejit.counters()["recompiles"], 2, "dynamic=False: one recompile per new shape")

# The log topics name the failed guard.
if os.environ.get("TRACEJIT_BUILD_ROOT"):
    launcher = os.path.join(os.environ["TRACEJIT_BUILD_ROOT"], "tracejit")
    code = ("import torch, tracejit\n"
            "def f(x):\n    return x * 2\n"
            "c = tracejit.compile(f, backend='eager')\n"
            "c(torch.ones(2)); c(torch.ones(3)); c(torch.ones(2))\n")
    p = subprocess.run([launcher, "--log", "recompiles,guards,graph_code", "-c", code],
                       capture_output=True, text=True, timeout=120)
    check_equal(p.returncode, 0, "--log run exits 0")
    check("recompil" in p.stderr and "TENSOR_MATCH L['x'] Float[2]" in p.stderr,
          "--log recompiles,guards: names the failed TENSOR_MATCH guard")
    check("aten.mul" in p.stderr or "aten::mul" in p.stderr, "--log graph_code: prints the graph")
    check_equal(p.stderr.count("recompiling"), 1, "--log recompiles: one recompile logged")
    # With several entries the newest one's failing guard is named (the closest miss).
    code = ("import torch, tracejit\n"
            "def f(x):\n    return x * 2\n"
            "c = tracejit.compile(f, backend='eager', dynamic=False)\n"
            "c(torch.ones(2)); c(torch.ones(3)); c(torch.ones(4))\n")
    p = subprocess.run([launcher, "--log", "recompiles", "-c", code], capture_output=True, text=True, timeout=120)
    lines = [l for l in p.stderr.splitlines() if "recompiling" in l]
    check(len(lines) == 2 and "expected 3, actual 4" in lines[1],
          f"--log recompiles: the newest entry's failing guard is named: {lines}")
else:
    print("skip  --log checks (TRACEJIT_BUILD_ROOT not set)")

finish()
