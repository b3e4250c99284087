# FIXED in round 23 (the lead, from the review of the round's size-template
# guards): a WRONG VALUE, silently, on aot_eager and llvm with
# dynamic=True: 31 elements where eager gives 4 at (31, 4). The order of
# two size classes was recorded only when strict at every point; the
# capture at (9, 9) (dynamic=True captures the first call) ties, so
# min(n0, n1) fitted as n0 over the capture and the probes (n0 <= n1 at
# each) and no order was kept. A pair equal at some point and ordered at
# the others is now kept weakly (SizeTemplate::weak_orders: n0 > n1 is
# refused, n0 == n1 served).
# fuzz mode: --dynamic
import torch
LOG = []


def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n0, n1 = [(9, 9), (11, 20), (13, 31), (31, 4), (6, 14), (5, 8)][variant]
    x0 = torch.randn((n0, n1), generator=g, dtype=torch.float32)
    x1 = torch.randn((100,), generator=g, dtype=torch.float32)
    return [x0, x1]


def fn(x0, x1):
    n = x0.diagonal().shape[0]
    return (x1[:n] * 2, )
