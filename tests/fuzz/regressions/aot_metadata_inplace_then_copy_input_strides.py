# FIXED (2026-11-26, branch aotfix; was an open defect found by the fuzzer, seed 201478, shrunk): under AOT `x.transpose_(0, 0)` then `x.copy_(v)` on a strided input
# leaves the input with strides (1,) where eager keeps (2,).
# What was wrong: the input's final geometry was read off its functional value, which
# after `copy_` is laid out like the source: a no-op `transpose_` made it
# a metadata mutation with strides (1,).
# AOT now takes eager's metadata from a run of the captured graph on meta
# tensors with eager's semantics (compile/aot/eager_meta.cpp).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((4,), generator=g, dtype=torch.float32)[::2]
    x1 = torch.randint(0, 2, (4,), generator=g).bool()[::2]
    x2 = torch.randn((2,), generator=g, dtype=torch.float32)
    return [x0, x1, x2]

def fn(x0, x1, x2):
    v3 = x2.prod(-1)
    x0.transpose_(0, 0)
    x0.copy_(v3)
