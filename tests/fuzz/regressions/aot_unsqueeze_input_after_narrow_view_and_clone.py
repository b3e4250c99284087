# FIXED (found by the fuzzer, seed 1324067, shrunk): under AOT (aot_eager,
# llvm) the input x0 came back with its old shape: x0.unsqueeze_(0) after a
# narrow view of x0 and a clone of that view (a print between them breaks
# the graph, so the second graph takes x0 and its view v1 as inputs). AOT's
# eager-layout run builds the inputs on one meta storage with set_, which on
# meta sets the storage's size to what the view spans: v1 (one element at
# offset 0) shrank it, x0's unsqueeze_ then failed its bounds check on meta
# and was taken as changing no metadata. The meta storage now keeps the
# real storage's size (compile/aot/eager_meta.cpp).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2,), generator=g, dtype=torch.float32)
    return [x0]

def fn(x0):
    v1 = x0.narrow(0, 0, 1)
    v4 = v1.clone()
    print('p', type(v4).__name__, v4.requires_grad)
    x0.unsqueeze_(0)
    v5 = torch.stack([v4, v1])
    return {}
