# FIXED (found by the fuzzer in --dynamic mode, seed 4600096, shrunk):
# `torch.broadcast_tensors(x0, x0)[1]` is x0 itself in eager, so
# `v1.squeeze_()` squeezes x0 and `x0.size(-1)` is n0. With dynamic dims
# the tracer recorded the ATen op (new tensors) instead of returning its
# inputs, so x0 kept its (n0, 1) shape, on every backend. A tensor
# broadcast with itself now comes back as itself under dynamic dims too
# (src/tracer/torch_broadcast.cpp).
# fuzz mode: --dynamic
import torch
LOG = []

def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n0, = [(2,), (3,), (18,), (6,), (5,), (7,), (4,), (22,)][variant % 8]
    x0 = torch.randint(0, 2, (n0, 1), generator=g).bool()
    return [x0]

def fn(x0):
    v1 = torch.broadcast_tensors(x0, x0)[1]
    v1.squeeze_()
    s5 = x0.size(-1)
    return [s5, x0.shape]
