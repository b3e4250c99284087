# FIXED (round 12, widened fuzzer, seed 9800589 of the campaign
# 9800000..9802999 on the merged build, shrunk by fuzz.py): hypot saves its
# result v4 for its backward; v4 is carried over the break (tolist) and
# restrided in place there (t_(), a version bump). The loss reads only v5,
# so eager's engine never unpacks what hypot saved. The compiled node saves
# v4 for the whole graph's backward: under llvm the backward raised "one of
# the variables needed for gradient computation has been modified by an
# inplace operation". A backward whose tangents did not all come now
# unpacks only the saved tensors the present ones need when unpacking one
# fails (jit/aot.cpp, graph/aot/partition.h).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((1, 1), generator=g, dtype=torch.float64).expand(2, 2)
    x1 = torch.randn((4, 2), generator=g, dtype=torch.float32)[::2]
    x0.requires_grad_()
    x1.requires_grad_()
    return [x0, x1]

def fn(x0, x1):
    v1 = torch.fmod(x0, x1)
    v4 = torch.hypot(v1, v1)
    v5 = v1.abs()
    print('p', x1.long().tolist())
    v15 = v4.t_()
    return (v5,)
