# OPEN, expected to fail (widened fuzzer, round 11, fixed-slice seeds 21137 and
# 21249 of fuzz_slice_aot, shrunk by hand): x2 is a transposed (1, 2) leaf
# with strides (1, 1) that requires grad. Its gradient is the sum of the
# gradients of x2 returned as is and of maximum(x1, x2); eager's
# AccumulateGrad keeps that sum's strides (2, 1) on the size-1 dim, the
# compiled backward's sum comes out (1, 1) under aot_eager and llvm. Values
# are equal; only the stride of the size-1 dim differs (the class of
# tests/regressions/28, the case its fix leaves open: the incoming gradient
# is not an expanded scalar).
# Round 14: the backward node now lays a computed gradient's size-1 dims out
# as meta inference of the backward graph gives them for the layouts that
# came (regressions/aot_computed_grad_stride_of_size1_dim); still open here:
# maximum's formula ends in an in-place `masked_fill_`, which keeps where()'s
# layout (1, 1) in eager, and the functional backward graph records it as
# an out-of-place masked_fill, laid out (2, 1); eager's layouts of in-place
# formula steps are lost to functionalization.
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
