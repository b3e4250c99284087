"""OPEN defect (issue 42; the session-26 review of the speculative
item()/tolist() default), registered as an expected failure: run once, on
eager, aot_eager and llvm.

A property getter with a side effect (a call counter), read before a
number from Tensor.item() whose value a branch needs: eager runs the
getter once per call. The tracer runs such a getter while it traces; the
speculative trace stops at the branch and the frame is traced again
breaking at the read, which runs the getter a second time, so the first
(compiling) call counts 2. Later calls count 1. (On `b6834c9`, where the
default broke at the read, it counted 1.) A fix: the retrace replays the
first trace's getter results instead of calling them again, or the tracer
inlines the getter (its store a side effect of the graph's).
Passes (and so fails the suite as an unexpected pass) once fixed."""
import torch

import tracejit
from e2e_util import check, finish


class P:
    calls = 0

    @property
    def scale(self):
        P.calls += 1
        return 2.0


p = P()


def f(x):
    s = p.scale
    n = x.sum().item()
    return x * s if n > 0 else x - s


for backend in ("eager", "aot_eager", "llvm"):
    tracejit.reset()
    cf = tracejit.compile(f, backend=backend)
    for call in range(3):
        x = torch.ones(2) * (call - 1)
        P.calls = 0
        want = f(x)
        eager_calls = P.calls
        P.calls = 0
        got = cf(x)
        check(torch.equal(got, want) and P.calls == eager_calls,
              f"{backend}, call {call}: the getter ran {P.calls} times, eager {eager_calls}")

finish()
