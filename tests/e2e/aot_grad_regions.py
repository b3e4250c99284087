"""Grad-mode regions inside a compiled function (`with torch.no_grad():`,
`torch.enable_grad()`, `torch.set_grad_enabled(b)`) go through AOT like any
other graph: the region is recorded under its own grad mode, so it is not
differentiated (or, for enable_grad under no_grad, is) and the outputs'
grad_fn is AOT's CompiledFunctionBackward, and values,
requires_grad, grad_fn presence and gradients match eager. Under functional
backends no graph falls back (backend_fallbacks stays 0)."""
import torch

import tracejit
from e2e_util import BACKEND, check, finish


def no_grad_inside(x, w):
    y = x @ w
    with torch.no_grad():
        scale = y.abs().mean() + 1.0  # a statistic, not differentiated
        w_copy = w * 2
    return (y / scale).sin().sum(), w_copy


def enable_grad_inside(x, w):
    a = x * 3
    with torch.enable_grad():
        b = (x * w).tanh()
    return a, b


def set_grad_enabled_inside(x, w, flag):
    with torch.set_grad_enabled(flag):
        y = (x * w).exp()
    return (y * 2,)


def run(fn, make, *extra, grad_mode=True, backward=True):
    torch.manual_seed(0)
    ins_e = make()
    ins_c = [t.detach().clone().requires_grad_(t.requires_grad) for t in ins_e]
    compiled = tracejit.compile(fn, backend=BACKEND)
    with torch.set_grad_enabled(grad_mode):
        want = fn(*ins_e, *extra)
        got = compiled(*ins_c, *extra)
    facts = lambda outs: [(o.requires_grad, o.grad_fn is not None) for o in outs]
    ok = all(torch.allclose(g, w) for g, w in zip(got, want)) and facts(got) == facts(want)
    if BACKEND != "eager":  # AOT's compiled node, not op-by-op autograd
        ok &= all(o.grad_fn is None or o.grad_fn.name() == "CompiledFunctionBackward" for o in got)
    if backward:
        torch.autograd.backward([o.sum() for o in want if o.requires_grad])
        torch.autograd.backward([o.sum() for o in got if o.requires_grad])
        for a, b in zip(ins_e, ins_c):
            ok &= (a.grad is None) == (b.grad is None)
            ok &= a.grad is None or torch.allclose(a.grad, b.grad, atol=1e-6)
    return ok


make = lambda: [torch.randn(4, 5, requires_grad=True), torch.randn(5, 5, requires_grad=True)]
make_same = lambda: [torch.randn(4, 5, requires_grad=True), torch.randn(4, 5, requires_grad=True)]
before = tracejit.counters()["backend_fallbacks"]
check(run(no_grad_inside, make), "no_grad region inside a training function: values, requires_grad, grads")
check(run(enable_grad_inside, make_same, grad_mode=False),
      "enable_grad region in a function called under no_grad: the region is differentiated")
check(run(enable_grad_inside, make_same, grad_mode=True), "enable_grad region under grad mode")
for flag in (True, False):
    check(run(set_grad_enabled_inside, make_same, flag), f"set_grad_enabled({flag}) region")
fallbacks = tracejit.counters()["backend_fallbacks"] - before
check(fallbacks == 0, f"no graph fell back to the captured graph (backend_fallbacks moved by {fallbacks})")
finish()
