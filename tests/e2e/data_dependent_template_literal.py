"""An int inside the part after a data-dependent op (issue 39, round 25;
the session-25 review's tpl_unbacked_literal.py). `m = x[x > 0]` has a
data-dependent length n; the part after it is compiled per size, from an
AOT size template once it has three points. `k = m[:5].shape[0]` is
min(n, 5): fitted as the literal 5 from points with n >= 5, the template
gave 10.0 and 5 at n = 3 where eager gives 3.0 and 3 (aot_eager and llvm on
d1772ea, per the review). Each new size a template serves is now captured
and compared node by node with the template's graph for it. Every call must
give eager's values bit for bit, under dynamic=None and dynamic=True."""
import torch

import tracejit
from e2e_util import BACKEND, check, finish

torch.set_num_threads(1)


def f(x):
    m = x[x > 0]
    k = m[:5].shape[0]
    return torch.arange(k).float().sum() + m.sum() * 0, m[:5].sum() * 0 + k


for dynamic in (None, True):
    tracejit.reset()
    cf = tracejit.compile(f, backend=BACKEND, dynamic=dynamic)
    for npos in [7, 9, 6, 8, 12, 10, 3, 2, 4, 1, 0, 5, 11]:
        x = torch.cat([torch.ones(npos), -torch.ones(4)])
        want, got = f(x), cf(x)
        same = all(torch.equal(a, b) and a.dtype == b.dtype for a, b in zip(want, got))
        check(same, f"dynamic={dynamic}, {npos} positive: {[t.item() for t in got]} as eager's {[t.item() for t in want]}")

finish()
