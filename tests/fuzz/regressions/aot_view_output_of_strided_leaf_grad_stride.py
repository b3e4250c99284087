# FIXED (round 13; round 12's open class "gradient strides on size-1
# dims", fresh-campaign seed 9901388, shrunk by hand): x1 is a (1, 3) row
# of a (2, 3) tensor (strides (6, 1)) that requires grad; the output is
# x1[:], a view of it. Eager's gradient comes from slice_backward, laid
# out contiguous (3, 1), which AccumulateGrad steals; the wrapper remade
# the view with as_strided, whose backward lays the gradient out in x1's
# strides (6, 1). The view is now made again by its view ops
# (compile/aot/capture_outputs.cpp, OutputInfo::replay).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x1 = torch.randn((2, 3), generator=g, dtype=torch.float64)[::2]
    x1.requires_grad_()
    return [x1]

def fn(x1):
    v7 = x1[:]
    return (v7,)
