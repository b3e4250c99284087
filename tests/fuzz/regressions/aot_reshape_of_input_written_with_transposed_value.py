# FIXED (round 14; fresh-campaign seed 9953025 (--dynamic; it fails
# statically too), shrunk by hand): x0 is written with a transposed value
# (`copy_`) and returned as `x0.reshape(-1)`. Eager's reshape views x0
# (x0 stays contiguous); the functional x0 is laid out as the copied value,
# where reshape cannot view, so AOT returned a fresh tensor sharing nothing
# with x0. Capture now takes an output whose eager tensor shares memory
# with an input the graph writes for a view of that input, made after the
# write (compile/aot/capture_outputs.cpp).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(-4, 5, (3, 2), generator=g)
    x1 = torch.randint(0, 2, (2, 3), generator=g).bool().transpose(-1, -2)
    return [x0, x1]

def fn(x0, x1):
    x0.copy_(x1.clamp(min=0, max=1))
    return (x0.reshape(-1),)
