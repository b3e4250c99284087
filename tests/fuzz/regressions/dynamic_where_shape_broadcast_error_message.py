# OPEN until the fix of tests/regressions/32 lands (widened fuzzer, round
# 11, --dynamic, seed 7700202, shrunk): torch.where(ones(4, bool), x0,
# 1).shape of an x0 whose last size is 4 at variant 0 and 40, 8, ... at
# the others: eager raises RuntimeError 'The size of tensor a (4) must
# match the size of tensor b (40) at non-singleton dimension 1'; compiled
# with dynamic=True, every backend raised RuntimeError with the message
# "('Attempting to broadcast a dimension of length ', '40', '!')" (a
# tuple's repr). Every backend must pass.
# fuzz mode: --dynamic
import torch
LOG = []

def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n0, n1 = [(4, 4), (2, 40), (8, 8), (3, 3), (4, 5), (2, 5)][variant]
    x0 = torch.randn((n0, n1), generator=g, dtype=torch.float64)
    x1 = torch.randn((), generator=g, dtype=torch.float32)
    x0.requires_grad_()
    x1.requires_grad_()
    return [x0, x1]

def fn(x0, x1):
    v6 = torch.where(torch.ones(4, dtype=torch.bool), x0, 1).shape
    return (v6,)
