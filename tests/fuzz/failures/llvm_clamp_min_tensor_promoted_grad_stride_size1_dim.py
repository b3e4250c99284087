# OPEN, expected to fail (round 21's static campaign, seed 9993160, shrunk by
# the fuzzer; fails on main's 36c6481 too; llvm only, aot_eager passes):
# `torch.clamp_min(x2, x1)` with x2 a (3, 1) float64 leaf with strides
# (1, 3) (a transposed (1, 3)) and x1 a float32 (3, 1) with strides (2, 1).
# Eager's x2.grad has strides (1, 3), llvm's (1, 1) (values equal): a
# computed gradient's size-1 dim, where the dtypes differ (clamp's tensor
# bound promoted; cf. issue 39's item 27 on the forward). Not analysed
# (round 21's deadline): aot_eager lays it out as eager, so the llvm
# backward's graph after its passes, or its layout inference
# (backward_node.cpp, eager_layouts), differs.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((1, 1), generator=g, dtype=torch.float64)
    x1 = torch.randn((6, 1), generator=g, dtype=torch.float32)[::2]
    x2 = torch.randn((1, 3), generator=g, dtype=torch.float64).transpose(-1, -2)
    x0.requires_grad_()
    x2.requires_grad_()
    return [x0, x1, x2]

def fn(x0, x1, x2):
    v1 = torch.clamp_min(x2, x1)
    return (v1,)
