# FIXED (round 15; was failures/, found by the widened fuzzer in round 11,
# fixed-slice seeds 21137 and 21249 of fuzz_slice_aot, shrunk by hand): x2 is
# a transposed (1, 2) leaf with strides (1, 1) that requires grad. Its
# gradient is the sum of the gradients of x2 returned as is and of
# maximum(x1, x2). maximum's formula ends in an in-place step,
# `where(...).masked_fill_(self < other, 0)`, which keeps where()'s layout
# (1, 1) in eager; the functional backward graph records an out-of-place
# masked_fill, laid out (2, 1), and the compiled gradient came out (2, 1).
# AOT's capture now tags the ops functionalization recorded for a formula's
# in-place step (compile/aot/inplace_steps.h: a dispatch mode sees the
# in-place call above the recorded one), and the backward node's layout
# inference gives such a node its first argument's layout
# (compile/aot/backward_node.cpp). No value changes.
import torch

LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x1 = torch.randn((), generator=g, dtype=torch.float64)
    x2 = torch.randn((2, 1), generator=g, dtype=torch.float64).transpose(-1, -2)
    x1.requires_grad_()
    x2.requires_grad_()
    return [x1, x2]


def fn(x1, x2):
    v4 = torch.maximum(x1, x2.double())
    return (x2, v4)
