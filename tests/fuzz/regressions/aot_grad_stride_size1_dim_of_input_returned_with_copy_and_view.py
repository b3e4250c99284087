# FIXED in round 21 (was failures/, open since round 17's campaign, static
# seed 9976106, shrunk by the fuzzer; `--dynamic` found it again in round
# 20): x0 is a (4, 1, 2) leaf with strides (4, 2, 1) (every other row of an
# (8, 1, 2) tensor) that requires grad; the graph returns x0 itself,
# `x0.contiguous()` (a copy) and a view of `x0.transpose(0, -1)[0]`.
# Eager's x0.grad has strides (2, 8, 1), the compiled one had (2, 2, 1):
# only the stride of the size-1 dim differed, values equal.
# Cause: LibTorch 1.13's engine runs the ready node with the highest
# sequence number first and adds a leaf's gradients out of place in arrival
# order (TensorIterator lays each sum out from its operands; AccumulateGrad
# keeps the last sum's size-1 strides). Eager's contributions arrive as
# A (x0's own `sum()`), B (clone's), C (the view chain's); compiled, B came
# from the CompiledFunctionBackward node and C from the view AOT's wrapper
# made again after attaching it (a higher sequence number), so C arrived
# before B. Fix (compile/aot/grad_relays.h): the capture notes each
# contribution's and each view output's place in the program (the
# sequence numbers of the capture's autograd nodes that hand the input its
# gradient, ranked), and the wrapper makes those views and one relay node
# per contribution in that order before the backward node, whose sequence
# number is then above them all.
import torch
LOG = []

def helper3(a):
    return a.transpose(0, -1)[0]

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((8, 1, 2), generator=g, dtype=torch.float64)[::2]
    x1 = torch.randint(-4, 5, (5, 1, 2), generator=g)[1:]
    x0.requires_grad_()
    return [x0, x1]

def fn(x0, x1):
    v2 = torch.where(torch.arange(2) > 0, 0.0, x1)
    v4 = helper3(x0)
    LOG.append(v4.sum())
    v7 = x0.contiguous()
    LOG.append(v7 is x0)
    v8 = v4[None]
    return (v8, x1, v7, x0)
