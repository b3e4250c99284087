# FIXED (found by scripts/fuzz, seed 1301049): `v.floor_divide_(2)` on a bool
# tensor raises in eager ("result type Long can't be cast to the desired
# output type Bool"), but under AOT LibTorch's functionalization computed it
# out of place and cast the result back, so nothing raised (or a later op
# raised another error). Meta inference now makes eager's check for in-place
# arithmetic (graph/meta_infer.cpp, inplace_cast_check): the op breaks the
# graph and raises in CPython as eager does.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 2, (8, 1, 2), generator=g).bool()[::2]
    x1 = torch.randint(-4, 5, (3,), generator=g)
    return [x0, x1]


def fn(x0, x1):
    v2 = x0 < x0
    v3 = v2 * x0 + x1[:2].bool()
    v3.floor_divide_(2)
    return ()
