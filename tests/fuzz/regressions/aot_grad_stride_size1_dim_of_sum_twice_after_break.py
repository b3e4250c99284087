# FIXED (round 19; round 16's campaign, `--dynamic` seed 9961556, shrunk by
# the fuzzer; fails statically too): x0 is a (3, 1) leaf with strides
# (1, 3) that requires grad. The graph before the break (a reshape eager
# refuses, caught) returns `x0.sum() + x0.sum()`; the graph after it reads
# x0 through floor() and where(). Eager's engine gets three gradients for
# x0, floor's dense zeros (1, 3) and the two sums' stride-0 expands, and
# adds them out of place in arrival order: `dense + expand` keeps the dense
# layout, (1, 3). The compiled first graph's backward added the two expands
# itself and handed the engine one dense (1, 1) tensor, and
# `(1, 3) + (1, 1)` is laid out (1, 1). The capture now tells the engine's
# own sums from the formulas' ops (hooks around every autograd node's
# apply: what is recorded outside one is the engine's), and the gradient of
# an input with a size-1 dim that is such a sum is returned as its
# contributions, one edge of the backward node each, which the engine adds
# as it adds eager's (compile/aot/engine_sums.h, capture.cpp).
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
