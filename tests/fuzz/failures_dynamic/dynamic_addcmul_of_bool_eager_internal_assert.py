# OPEN, expected to fail (round 22's `--dynamic` campaign, seed 9979973, not
# shrunk; fails on main's 0c52796 too, aot_eager and llvm).
# fuzz mode: --dynamic
# At variant 0's second inputs eager raises LibTorch 1.13's own
# `!needs_dynamic_casting<func_t>::check(iter) INTERNAL ASSERT FAILED`
# (Loops.h; `torch.addcmul(v3, v3, v2, value=0.5)` of a bool v3 and a
# float32 v2, on the branch `x0.max().item() > 1.5` takes), where the
# compiled call returns a value. Eager's error is a LibTorch bug; whether
# tracejit should raise it too (never a result where eager raises) is not
# decided; not analysed (round 22's deadline).
import torch

LOG = []


def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n1, n2 = [(2, 4), (7, 24), (21, 4), (2, 7), (2, 3), (37, 3)][variant]
    x0 = torch.randn((n2,), generator=g, dtype=torch.float64)
    x1 = torch.randn((1, n1, n2), generator=g, dtype=torch.float32)
    return [x0, x1]


def fn(x0, x1):
    if x0.max().item() > 1.5:
        v1 = x1.contiguous()
    else:
        v1 = x1 * x0
    x1.addcmul_(x1, x1)
    v2 = x1.clone()
    for i in range(2):
        LOG.append(i)
    v2.addcmul_(v1, v1)
    if v2.numel() > 8.5:
        v3 = x1.bool()
    else:
        v3 = x0 != 0
    l4 = [x1, v3]
    x1[:, 0] = x0
    u5 = x1.acos()
    v6 = torch.addcmul(v3, v3, v2, value=0.5)
    v7 = v3.repeat(2, *([1] * (v3.dim() - 1)))
    return (v3, )
