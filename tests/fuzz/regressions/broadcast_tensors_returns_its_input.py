# FIXED (found by scripts/fuzz, seed 1311066): `torch.broadcast_tensors(v7,
# v7)[1]` is v7 itself in eager (a tensor that has the common shape already
# comes back as the same object), but the tracer recorded the ATen op,
# whose outputs are new tensors: the two outputs shared memory but were not
# the same object. The tracer now expands only the tensors that need it and
# returns the others as they are (src/tracer/torch_broadcast.cpp).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((4, 3, 1), generator=g, dtype=torch.float32)[1:]
    return [x0]

def fn(x0):
    v1 = x0.reciprocal()
    v2 = v1.movedim(0, -1)
    v7 = v2[None]
    v9 = torch.broadcast_tensors(v7, v7)[1]
    return (v7, v9)
