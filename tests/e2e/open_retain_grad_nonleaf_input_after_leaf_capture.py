"""OPEN defect (issue 39; the session-26 review), registered as an expected
failure: run once, on aot_eager and llvm.

Session 26 hands the contributions of an input with autograd history that
some output does not reach apart (so retain_grad() or a hook on it is not
given an undefined gradient), but decides it from the inputs of the call
that captured the graph: compiled on a call with leaf inputs, then called
with x1 = l1 + 1 (retain_grad() and a hook on it) that the loss never
reaches, the call's backward raises `Expected a proper Tensor but got
None` where eager leaves x1.grad None and never calls the hook. No guard
tells the two calls apart. A fix: a guard on whether such an input is a
leaf (or has history), or handing contributions apart whatever the inputs.
Passes (and so fails the suite as an unexpected pass) once fixed."""
import torch

import tracejit
from e2e_util import check, finish


def f(x0, x1):
    return x0 * x1, x0.exp()


def run(fn, leaf):
    g = torch.Generator().manual_seed(0)
    l0 = torch.randn(3, generator=g).requires_grad_()
    l1 = torch.randn(3, generator=g).requires_grad_()
    x1 = l1 if leaf else l1 + 1
    called = []
    if not leaf:
        x1.retain_grad()
        x1.register_hook(lambda g: called.append(g is None))
    _, b = fn(l0, x1)
    b.sum().backward()
    return l0.grad.tolist(), None if leaf else x1.grad, called


for backend in ("aot_eager", "llvm"):
    tracejit.reset()
    cf = tracejit.compile(f, backend=backend)
    for leaf in (True, False, False):
        want = run(f, leaf)
        try:
            got = run(cf, leaf)
        except RuntimeError as e:  # the defect: a bogus exception
            got = f"raises {e}"[:100]
        check(got == want, f"{backend}, {'leaf' if leaf else 'non-leaf'} x1: {got} as eager's {want}")

finish()
