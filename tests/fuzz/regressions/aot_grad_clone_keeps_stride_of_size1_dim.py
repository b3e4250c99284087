# FIXED (found by the fuzzer, seed 4501449, shrunk): the sibling of
# aot_clone_keeps_stride_of_size1_dim.py with x0 requiring grad. A clone
# of a (1, 3) slice `x[::2]` keeps its stride of 6 on the size-1 dim in
# eager; written in place and returned from a graph that records a
# backward, its compiled value had stride 3 under aot_eager and llvm. AOT
# set eager's size-1 strides back only on graphs without a backward; it now
# sets them on every graph's outputs, before the backward node is attached
# (compile/aot/runtime_wrapper.cpp run), so the differentiable output keeps them.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2, 3), generator=g, dtype=torch.float64)[::2]
    x1 = 3
    x0.requires_grad_()
    return [x0, x1]


def fn(x0, x1):
    v3 = x0.clone()
    for i in range(4):
        v3.add_(i)
    print('p', x0.dim(), len(LOG))
    s5 = v3.stride()[0]
    return (s5,)
