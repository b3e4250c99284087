# FIXED (found by the fuzzer, seed 504896, shrunk; aot_eager and llvm):
# `squeeze_()` of a clone of an input that requires grad, then an in-place
# op on it: the joint graph's autograd hit LibTorch's INTERNAL ASSERT
# "!grad_fn". Such graphs now run as captured (compile/aot/boundary.cpp).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((4, 1, 4), generator=g, dtype=torch.float64)[1:]
    x0.requires_grad_()
    return [x0]

def fn(x0):
    v2 = x0.clone()
    v3 = v2.squeeze_()
    v3.index_fill_(1, torch.tensor([0]), -1)
    return ()
