"""A gradient's strides when the loss uses only some of the returned
outputs, one a view read by another's ops (issue 39, the gradient-stride
class; was the expected failure
open_grad_stride_of_leaf_when_only_returned_view_used).

`v2 = clamp(x0, max=x1); v3 = v2.t(); v5 = v3.exp() * 2`, all returned,
x0 and x1 (3, 1) leaves laid out as (1, 3): with only v3 used by the loss,
eager's x0.grad has strides (1, 1); the compiled call gave (1, 3) (values
equal). Fixed by the cut of a returned intermediate read by other
outputs' ops (CaptureOptions::cut_returned): v2's and v3's own gradients
now reach their own nodes, whose backward passes the incoming gradient on
as eager's does. Variants: the loss of v2 alone, of v5 alone, of v3 and v5;
compared with eager on the test's backend (strides and values), two calls."""
import torch

import tracejit
from e2e_util import BACKEND, check, finish, tensors_same


def f(x0, x1):
    v2 = torch.clamp(x0, max=x1)
    v3 = v2.t()
    v5 = v3.exp() * 2
    return (v2, v3, v5)


def run(fn, used):
    g = torch.Generator().manual_seed(0)
    a = torch.randn((1, 3), generator=g, dtype=torch.float64).t().requires_grad_()
    b = torch.randn((1, 3), generator=g, dtype=torch.float64).t().requires_grad_()
    outs = fn(a, b)
    sum(outs[k].sum() for k in used).backward()
    return (a.grad.stride(), None if b.grad is None else b.grad.stride()), [a.grad, b.grad]


for used in ((1,), (0,), (2,), (1, 2)):
    tracejit.reset()
    cf = tracejit.compile(f, backend=BACKEND)
    want = run(f, used)
    for call in (1, 2):
        got = run(cf, used)
        same = got[0] == want[0] and all(
            (g is None) == (w is None) and (g is None or tensors_same(g, w)) for g, w in zip(got[1], want[1]))
        same &= BACKEND == "eager" or tracejit.counters()["backend_fallbacks"] == 0  # compiled, not op by op
        check(same, f"outputs {used} used, call {call}: the gradients' strides {got[0]} as eager's {want[0]}")

finish()
