# FIXED (found by the fuzzer, seed 4501449, shrunk, then by hand): a clone
# of a (1, 3) slice `x[::2]` keeps its stride of 6 on the size-1 dim in
# eager; written in place and returned, its compiled value had stride 3
# under aot_eager and llvm (the functional add's layout), which
# `.stride()` shows. AOT compared layouts only on dims longer than 1; it
# now sets eager's strides back on such an output's size-1 dims, which
# copies nothing (compile/aot/capture.cpp note_layout, compile/aot/runtime_wrapper.cpp
# with_layout). Its sibling with x0 requiring grad:
# aot_grad_clone_keeps_stride_of_size1_dim.py.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2, 3), generator=g, dtype=torch.float64)[::2]
    return [x0, 3]


def fn(x0, x1):
    v3 = x0.clone()
    for i in range(4):
        v3.add_(i)
    print('p', x0.dim(), len(LOG))
    s5 = v3.stride()[0]
    w = x0.clone()
    w.mul_(x1)
    return (s5, w.stride(), w)
