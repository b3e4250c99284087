# FIXED (round 19; round 18's campaign, --dynamic seed 9964649, shrunk by
# hand; passes statically; every backend: the tracer):
# `torch.broadcast_tensors(x0, v4)[1]` with x0 and v4 of one shape is v4
# itself in eager, so `v5.squeeze_()` squeezes v4 and `v4.clone()` has
# eager's (n,) shape. Under dynamic dims the tracer returned inputs as
# themselves only for a tensor broadcast with itself
# (regressions/dynamic_broadcast_tensors_of_itself_squeezed); for two
# tensors it recorded the ATen op, whose results are new views, so v4 kept
# (1, n) and len() differed. The tracer now compares the tensors' symbolic
# shapes (x.shape == y.shape, a fact the SIZE_FACTS guard checks) and,
# where all equal the first one's, returns each tensor itself
# (src/tracer/torch_broadcast.cpp); other shapes still take the ATen op.
# fuzz mode: --dynamic
import torch
LOG = []

def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n1, = [(2,), (38,), (5,), (7,), (3,), (4,)][variant % 6]
    x0 = torch.randn((1, n1), generator=g, dtype=torch.float64)
    return [x0]

def fn(x0):
    v4 = x0 == x0
    v5 = torch.broadcast_tensors(x0, v4)[1]
    v5.squeeze_()
    v8 = v4.clone()
    LOG.append(len(v8))
    return [v8, v4.shape]
