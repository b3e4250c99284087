"""OPEN defect (issue 39, the gradient-stride class; the session-25 review,
main d1772ea too), registered as an expected failure: run once, on
aot_eager and llvm.

Only the returned view v3 = v2.t() is used by the loss (v2 = clamp(x0,
max=x1); v2 and v5 get no gradient): x0.grad of a (3, 1) leaf laid out as
(1, 3) has strides (1, 1) in eager and (1, 3) compiled. Values are equal.
Passes (and so fails the suite as an unexpected pass) once fixed."""
import torch

import tracejit
from e2e_util import check, finish


def f(x0, x1):
    v2 = torch.clamp(x0, max=x1)
    v3 = v2.t()
    v5 = v3.exp() * 2
    return (v2, v3, v5)


def run(fn):
    g = torch.Generator().manual_seed(0)
    a = torch.randn((1, 3), generator=g, dtype=torch.float64).t().requires_grad_()
    b = torch.randn((1, 3), generator=g, dtype=torch.float64).t().requires_grad_()
    v2, v3, v5 = fn(a, b)
    v3.sum().backward()
    return a.grad.stride(), b.grad.stride(), a.grad.flatten().tolist()


for backend in ("aot_eager", "llvm"):
    tracejit.reset()
    cf = tracejit.compile(f, backend=backend)
    want = run(f)
    for call in (1, 2):
        got = run(cf)
        check(got == want, f"{backend}, call {call}: x0.grad's strides {got[:2]} as eager's {want[:2]}")

finish()
