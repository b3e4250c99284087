"""An input with autograd history (`x1 = l1 + 1`) that called retain_grad()
or has a tensor hook, read only by outputs the loss does not use (issue 39;
was the expected failure open_retain_grad_of_input_without_gradient).

Eager's backward never reaches x1's node: x1.grad stays None and the hook
is never called. Before the fix the compiled call's one backward node (its
outputs joined by x0's summed gradient) had an edge to x1 and handed it an
undefined gradient: `loss.backward()` raised `Expected a proper Tensor but
got None` (retain_grad) or called the hook with None. Now such an input's
contributions and the others' are handed apart (split_for_history in the
capture), so the outputs reaching x1 make a node of their own, which a
backward from the other outputs never runs. Compared with eager on the
test's backend, two calls each."""
import torch

import tracejit
from e2e_util import BACKEND, check, finish, tensors_same


def base(x0, x1):
    return x0 * x1, x0.exp()


def swapped(x0, x1):
    return x0.exp(), x1.sin() * x0


def three(x0, x1):
    return x0 * x1, x0.exp(), x1.cos() + x0


PROGRAMS = [("base", base, 1), ("swapped", swapped, 0), ("three", three, 1)]  # (name, fn, output the loss uses)


def run(f, used, hook):
    l0 = torch.linspace(0.5, 1.5, 3, requires_grad=True)
    l1 = torch.linspace(-1.0, 1.0, 3, requires_grad=True)
    x0, x1 = l0 * 2, l1 + 1
    calls = []
    if hook:
        x1.register_hook(lambda g: calls.append(g))
    else:
        x1.retain_grad()
    o = f(x0, x1)
    o[used].sum().backward()
    return [l0.grad, l1.grad, None if hook else x1.grad], len(calls)


def same(got, want):
    return got[1] == want[1] and all(
        (g is None) == (w is None) and (g is None or tensors_same(g, w)) for g, w in zip(got[0], want[0]))


for name, fn, used in PROGRAMS:
    for hook in (False, True):
        tracejit.reset()
        want = run(fn, used, hook)
        cf = tracejit.compile(fn, backend=BACKEND)
        for call in (1, 2):
            try:
                got = run(cf, used, hook)
            except Exception as e:  # noqa: BLE001 (the defect: a bogus exception)
                got = ([f"raises {type(e).__name__}: {str(e)[:60]}"], 0)
            ok = not isinstance(got[0][0], str) and same(got, want)
            ok &= BACKEND == "eager" or tracejit.counters()["backend_fallbacks"] == 0
            check(ok, f"{name}, {'a hook' if hook else 'retain_grad'} on x1, call {call}: {got} as eager's {want}")

finish()
