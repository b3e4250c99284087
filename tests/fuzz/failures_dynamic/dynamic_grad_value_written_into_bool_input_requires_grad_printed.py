# OPEN, expected to fail (round 22's `--dynamic` campaign, seed 9979603, not
# shrunk; fails on main's 0c52796 and 8ddb575, on every backend, eager
# included: the tracer). Analysed in round 23, not fixed: a LibTorch quirk.
# fuzz mode: --dynamic
# `x1[...] = x0` writes a value requiring grad (a 0-d leaf) into a bool
# input x1; eager's later `print(x1.requires_grad)` prints True, the
# compiled call's False (values and gradients agree). Cause: Python's
# `t[...] = v` with a 0-d v is `t.fill_(v)` on t itself (no view), and
# LibTorch 1.13's autograd for fill_.Tensor rebases t's history on
# FillBackward3 without checking that t's dtype can require grad: a bool
# tensor then requires grad, which `requires_grad_()` refuses ("only
# Tensors of floating point dtype can require gradients"). copy_ does
# check (`x2.copy_(x0)` into int64 leaves it False), as does a write into a
# view (`x3[0] = x0` on a bool x3: False). The tracer's grad writes
# (tracer/grad_writes.cpp, requires_grad_by_write) answer False for a
# dtype that cannot require grad (can_require_grad). Matching it would mean
# modelling fill_'s missing check for a whole non-view target (tracer) and
# giving the written input that history after the call (AOT's write-back);
# round 23 left it (time-boxed; a LibTorch bug's effect on a flag, values
# and gradients right).
import torch

LOG = []


def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n0, = [(3,), (7,), (6,), (6,), (5,), (8,)][variant]
    x0 = torch.randn((), generator=g, dtype=torch.float32)
    x1 = torch.randint(0, 2, (n0, 1), generator=g).bool()
    x0.requires_grad_()
    return [x0, x1]


def fn(x0, x1):
    print('p', x0.stride(), x0.is_contiguous())
    x1[...] = x0
    print('p', type(x1).__name__, x1.requires_grad)
    if x0.numel() > 0.5:
        v2 = torch.relu(x0)
    else:
        v2 = torch.ones_like(x0) * 3
    v3 = v2.squeeze(-1)
    v4 = v3.sin()
    v7 = v2 + v3
    v9 = v3.log1p()
    v10 = torch.hypot(v7, v7)
    v11 = v3.clone()
    for i in range(4):
        LOG.append(i)
    return (v7, v7, )
