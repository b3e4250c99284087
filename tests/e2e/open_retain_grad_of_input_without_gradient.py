"""OPEN defect (issue 39; the session-25 review, main d1772ea too),
registered as an expected failure: run once, on aot_eager and llvm.

An input with autograd history that called retain_grad() (`x1 = l1 + 1`),
read only by an output the loss does not use: eager's backward never
reaches x1's node (x1.grad stays None); the compiled call's backward node
has an edge to it and hands it an undefined gradient, and
`loss.backward()` raises `Expected a proper Tensor but got None ...
argument #0 'self'` (a bogus exception). With a tensor hook on x1 instead,
the compiled backward calls the hook with None, where eager never calls it.
(A Python autograd.Function whose backward returns None for x1 raises the
same in eager: LibTorch 1.13's retain_grad hook refuses an undefined
gradient. The fix is for x1's node not to run, as eager's graph never
reaches it.)
Passes (and so fails the suite as an unexpected pass) once fixed: then
move it to the e2e tests that must pass."""
import torch

import tracejit
from e2e_util import check, finish


def fn(x0, x1):
    return x0 * x1, x0.exp()


def run(f, hook):
    l0 = torch.ones(3, requires_grad=True)
    l1 = torch.ones(3, requires_grad=True)
    x0, x1 = l0 * 2, l1 + 1
    calls = []
    if hook:
        x1.register_hook(lambda g: calls.append(g))
    else:
        x1.retain_grad()
    o = f(x0, x1)
    o[1].sum().backward()
    return l0.grad.tolist(), l1.grad, x1.grad, len(calls)


for backend in ("aot_eager", "llvm"):
    for hook in (False, True):
        tracejit.reset()
        want = run(fn, hook)
        try:
            got = run(tracejit.compile(fn, backend=backend), hook)
        except Exception as e:  # the defect: a bogus exception
            got = ("raises", type(e).__name__, str(e)[:80])
        check(got == want, f"{backend}, {'a hook' if hook else 'retain_grad'} on x1: {got} as eager's {want}")

finish()
