# OPEN, expected to fail (round 16's campaign, `--dynamic` seed 9961556,
# shrunk by the fuzzer; fails statically too): x0 is a (3, 1) leaf with
# strides (1, 3) that requires grad. The graph before the break (a reshape
# eager refuses, caught) returns `x0.sum() + x0.sum()`; the graph after it
# reads x0 through floor() and where(). Eager's x0.grad keeps x0's layout,
# (1, 3); the compiled one is (1, 1). Values are equal; only the stride of
# the size-1 dim differs. Not analysed further in round 16 (time-box): x0's
# gradient is the engine's sum of both graphs' gradients (two expanded
# scalars from the sums, floor's zeros), whose layout eager's InputBuffer
# picks at run time, as in seed 9802252 (docs/reliability.md round 15).
import torch
LOG = []

def helper1(*args):
    return sum((t.sum() for t in args))

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((1, 3), generator=g, dtype=torch.float64).transpose(-1, -2)
    x1 = 0.5
    x0.requires_grad_()
    return [x0, x1]

def fn(x0, x1):
    v2 = helper1(x0, x0)
    try:
        v4 = v2.reshape(-1, 7)
    except Exception as e:
        v4 = x0.floor()
    v6 = torch.where(x0 != 0, v4, 0.0)
    v7 = v6 + v2
    return (v7,)
