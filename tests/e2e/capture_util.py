"""Shared by the capture_*.py programs (issue 11's constructs): run a
function eagerly and compiled, compare the results, and check the graph
and break counts explain reports."""
import torch

import tracejit
from e2e_util import BACKEND, check, check_equal


def same(a, b):
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
                and torch.allclose(a, b, atol=1e-5, equal_nan=True))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(a) is type(b) and list(a.keys()) == list(b.keys()) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def expect(name, fn, args, graphs=1, breaks=0, make_args=None):
    """`make_args` (optional) builds fresh arguments for each run, for
    functions that mutate what they are given."""
    tracejit.reset()
    fresh = make_args or (lambda: args)
    want = fn(*fresh())
    got = tracejit.compile(fn, backend=BACKEND)(*fresh())
    check(same(got, want), f"{name}: matches eager")
    ex = tracejit.explain(fn)(*fresh())
    reasons = "; ".join(r.reason[:160] for r in ex.break_reasons[:3])
    check_equal((ex.graph_count, ex.graph_break_count), (graphs, breaks),
                f"{name}: graphs/breaks" + (f" ({reasons})" if reasons else ""))
    return ex
