"""The llvm backend end to end (issue 12): fused kernels give eager's values
forward and backward (an MLP training step), the kernel counters move (a
second identical function hits the in-memory cache), and
config.debug_inject_bug makes relu fail at compile time (a warning and eager
values under suppress_errors, BackendCompilerFailed without it), at run
time (the call raises) or silently (wrong values: what the repro tools hunt)."""
import copy
import os
import subprocess
import tempfile
import warnings

import torch

import tracejit
from e2e_util import check, check_raises, finish

torch.manual_seed(0)
# A fresh kernel disk cache, so the counters below see real compiles.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="tracejit_cache_")
LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "..", "..", "build")),
                        "tracejit")


def chain(x, y):
    return ((x * 2 + y).relu() - 0.5).sigmoid() * torch.tanh(y) + x.exp().sin()


x, y = torch.randn(64, 33), torch.randn(33)
tracejit.reset()
got = tracejit.compile(chain, backend="llvm")(x, y)
check(torch.allclose(got, chain(x, y), rtol=1e-5, atol=1e-5), "a fused chain with broadcasting gives eager's values")
c = tracejit.counters()
check(c["kernels_compiled"] >= 1, f"kernels_compiled counts the LLVM builds: {c}")


def chain_again(x, y):  # the same graph from another function: no LLVM run
    return ((x * 2 + y).relu() - 0.5).sigmoid() * torch.tanh(y) + x.exp().sin()


before = tracejit.counters()["kernels_compiled"]
tracejit.compile(chain_again, backend="llvm")(x, y)
c = tracejit.counters()
check(c["kernels_compiled"] == before and c["kernel_cache_hits"] >= 1,
      f"an identical graph is served by the kernel cache: {c}")

# integer and bool results are exact; a float scalar on an int tensor promotes
i = torch.randint(-5, 6, (10, 7))


def ints(i):
    return ((i * 3 - 1) > 2) & (i.abs() < 4), (i + 0.5) * 2


f = ints
got = tracejit.compile(ints, backend="llvm")(i)
want = f(i)
check(torch.equal(got[0], want[0]) and got[1].dtype == want[1].dtype and torch.equal(got[1], want[1]),
      "int/bool kernels are exact and follow eager's promotion")

# a training step: forward and backward graphs both compiled
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 32), torch.nn.Tanh(),
                            torch.nn.Linear(32, 4))
data = torch.randn(8, 16)
ref = copy.deepcopy(model)
out = tracejit.compile(model, backend="llvm")(data)
out.sum().backward()
ref(data).sum().backward()
check(torch.allclose(out, ref(data), atol=1e-5), "MLP forward")
check(all(torch.allclose(p.grad, q.grad, atol=1e-5) for p, q in zip(model.parameters(), ref.parameters())),
      "MLP gradients")

# embedding_bag (an extern op with four results, of which only the first is
# read; their sizes depend on the mode): every mode, with and without
# offsets and per-sample weights, gives eager's result
weight = torch.randn(100, 8)
bags = torch.randint(0, 100, (4, 10))
flat, offsets = bags.reshape(-1), torch.tensor([0, 3, 3, 17, 30])
last_offsets = torch.tensor([0, 3, 3, 17, 40])  # include_last_offset: the last is the end (eager writes past it otherwise)
per_sample = torch.rand(40)
F = torch.nn.functional
for mode in ("sum", "mean", "max"):
    cases = {
        "2-d input": (lambda i: F.embedding_bag(i, weight, mode=mode), (bags,)),
        "offsets": (lambda i, o: F.embedding_bag(i, weight, o, mode=mode), (flat, offsets)),
        "offsets, include_last_offset": (lambda i, o: F.embedding_bag(i, weight, o, mode=mode,
                                                                      include_last_offset=True), (flat, last_offsets)),
        "padding_idx": (lambda i: F.embedding_bag(i, weight, mode=mode, padding_idx=int(bags[0, 0])), (bags,)),
        "weight argument": (lambda i, w: F.embedding_bag(i, w, mode=mode) * 2, (bags, weight)),
    }
    if mode == "sum":
        cases["per_sample_weights"] = (lambda i, o, p: F.embedding_bag(i, weight, o, mode=mode, per_sample_weights=p),
                                       (flat, offsets, per_sample))
        cases["2-d per_sample_weights"] = (lambda i, p: F.embedding_bag(i, weight, mode=mode, per_sample_weights=p),
                                           (bags, per_sample.view(4, 10)))
    for what, (fn, args) in cases.items():
        want = fn(*args)
        got = tracejit.compile(fn, backend="llvm")(*args)
        check(got.shape == want.shape and got.dtype == want.dtype and torch.allclose(got, want, atol=1e-6),
              f"embedding_bag mode={mode}, {what}: eager's values")


def relu_fn(x):
    return (x + 1).relu() * 2


x = torch.randn(16)
want = relu_fn(x)
try:
    tracejit.config.debug_inject_bug = "relu_compile_error"
    tracejit.reset()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = tracejit.compile(relu_fn, backend="llvm")(x)
    check(torch.equal(got, want), "relu_compile_error + suppress_errors: eager's values")
    check(any("relu_compile_error" in str(m.message) for m in w), f"one warning names the failure: {[str(m.message) for m in w]}")
    check(tracejit.counters()["backend_fallbacks"] == 1, "the fallback is counted")

    tracejit.config.suppress_errors = False
    tracejit.reset()
    check_raises(tracejit.BackendCompilerFailed, lambda: tracejit.compile(relu_fn, backend="llvm")(x),
                 "relu_compile_error without suppress_errors raises BackendCompilerFailed")
    tracejit.config.suppress_errors = True

    # the compiled graph raises; the runtime then reruns the frame's bytecode
    # (nothing was written yet), so the caller sees eager's values and the
    # graph_breaks log says the graph failed
    script = ("import torch, tracejit\n"
              "tracejit.config.debug_inject_bug = 'relu_runtime_error'\n"
              "x = torch.randn(16)\n"
              "f = lambda x: (x + 1).relu() * 2\n"
              "assert torch.equal(tracejit.compile(f, backend='llvm')(x), f(x))\n")
    r = subprocess.run([LAUNCHER, "--log", "graph_breaks", "-c", script], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and "the graph failed at run time" in r.stderr,
          f"relu_runtime_error fails the graph at run time, the frame is rerun: {r.stderr[-400:]!r}")

    tracejit.config.debug_inject_bug = "relu_accuracy_error"
    tracejit.reset()
    got = tracejit.compile(relu_fn, backend="llvm")(x)
    check(torch.allclose(got, want + 2), "relu_accuracy_error: relu computes +1 (times 2 here)")
finally:
    tracejit.config.debug_inject_bug = None
    tracejit.config.suppress_errors = True
tracejit.reset()
check(torch.equal(tracejit.compile(relu_fn, backend="llvm")(x), want), "without the injected bug relu is right again")
finish()
