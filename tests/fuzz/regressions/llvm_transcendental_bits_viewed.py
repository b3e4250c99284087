# FIXED (found by scripts/fuzz, seed 1201650, shrunk): `x.float().sin()`
# viewed as int64 in the same graph differed from eager in the last bit
# under llvm (libmvec's sinf against ATen's Sleef; both within tolerance).
# Values whose bits the graph reads through `view(dtype)`, and everything
# they are computed from, now run as ATen ops (jit/lowering.cpp,
# mark_bits_observed). Across a graph break the bits stay libmvec's: the
# earlier graph cannot know (docs/reliability.md).
import torch
LOG = []


def helper3(a):
    t = a.float().sin()
    return -t


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((3, 4), generator=g, dtype=torch.float32)[1:]
    x0.requires_grad_()
    return [x0]


def fn(x0):
    v4 = helper3(x0)
    v5 = v4.float()
    v7 = v5.view(torch.int64)
    return {'v7': v7, 'v8': (x0.exp() * 2).sum().view(torch.int32)}
