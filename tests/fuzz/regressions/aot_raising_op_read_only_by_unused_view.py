# FIXED (found by scripts/fuzz, seed 881252): under AOT an integer division
# by zero whose result was read only by a view nobody used (`v3 // 0`, then
# `v3.transpose(0, -1)[0]` left unused) vanished with its exception, so the
# user's `except` never ran: expose_unused_results kept only results with
# no reader at all. A result read only by unused views now counts as unused
# (graph/passes/unused_results.cpp).
import torch
LOG = []


def helper4(a):
    return a.transpose(0, -1)[0]


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((), generator=g, dtype=torch.float32)]


def fn(x0):
    v1 = torch.tensor([[1, 2], [3, 4]]).t()
    try:
        v3 = v1 // 0
    except Exception as e:
        print('caught', repr(e)[:60])
        v3 = torch.erf(v1)
    v5 = helper4(v3)
    return (x0 + 1, )
