# FIXED (found by scripts/fuzz, seed 1320152): `x.flatten()` and
# `x.contiguous()` of a transposed input are two copies in eager; AOT's
# graph has two equal `clone` nodes, and common-subexpression elimination
# merged them because only the second was returned as it is (the first
# through `_unsafe_view`), so the outputs shared memory. CSE now keeps two
# nodes apart when both are returned directly or through views.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2, 2), generator=g, dtype=torch.float64)
    x1 = torch.randint(-4, 5, (2, 2), generator=g)
    x2 = torch.randint(-4, 5, (2, 2), generator=g).transpose(-1, -2)
    return [x0, x1, x2]

def fn(x0, x1, x2):
    v6 = x2.flatten()
    v9 = x2.contiguous()
    return (v6, v9)
