# OPEN, expected to fail (widened fuzzer, round 11, fixed-slice seeds 21137 and
# 21249 of fuzz_slice_aot, shrunk by hand): x2 is a transposed (1, 2) leaf
# with strides (1, 1) that requires grad. Its gradient is the sum of the
# gradients of x2 returned as is and of maximum(x1, x2); eager's
# AccumulateGrad keeps that sum's strides (2, 1) on the size-1 dim, the
# compiled backward's sum comes out (1, 1) under aot_eager and llvm. Values
# are equal; only the stride of the size-1 dim differs (the class of
# tests/regressions/28, the case its fix leaves open: the incoming gradient
# is not an expanded scalar).
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
