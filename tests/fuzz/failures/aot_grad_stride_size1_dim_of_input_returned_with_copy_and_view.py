# OPEN, expected to fail (round 17's campaign, static seed 9976106, shrunk by
# the fuzzer; fails on main's build of 5312a1e and cfb854e too): x0 is a
# (4, 1, 2) leaf with strides (4, 2, 1) (every other row of an (8, 1, 2)
# tensor) that requires grad; the graph returns x0 itself, `x0.contiguous()`
# (a copy) and a view of `x0.transpose(0, -1)[0]`. Eager's x0.grad has strides
# (2, 8, 1), the compiled one (2, 2, 1): only the stride of the size-1 dim
# differs, values are equal.
# Analysed in round 18 (docs/reliability.md): the class of
# aot_grad_stride_size1_dim_of_sum_twice_after_break, the order of the
# engine's sums. LibTorch 1.13's InputBuffer adds every gradient out of place,
# `old + new`, in the order they arrive, and TensorIterator lays each sum out
# from its operands. Eager's three contributions arrive as A (x0's own
# `sum()`, a stride-0 expand), B (clone's, the same), C (the view chain's,
# select_backward's zeros transposed: (1, 4, 4)): (A + B) is contiguous and
# (A + B) + C is laid out (2, 8, 1), which AccumulateGrad keeps (x0 is not
# dense: a contiguous gradient is stolen). Compiled, B comes from the
# CompiledFunctionBackward node, C from the view nodes AOT's wrapper replays
# after attaching that node: their sequence numbers are higher, the engine
# runs them first, C arrives before B, (A + C) + B is (1, 4, 4), and
# AccumulateGrad clones it contiguously, (2, 2, 1). Giving the node a
# sequence number after the replays fixes this program and breaks its mirror
# (`x0.contiguous()` before the view: eager's C arrives first); eager's order
# needs each contribution at its own op's place in the order, which one node
# per graph cannot give (an edge per eager contribution, each released at
# the sequence number of the op that made it).
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
