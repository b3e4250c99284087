# FIXED (found by the fuzzer, seed 3501814, shrunk; aot_eager and llvm):
# `x2.clamp(max=0.5).abs_().view(torch.int64)` returned zeros: LibTorch
# 1.13's functionalization replays view(dtype) of a tensor written in place
# as `_to_copy`, converting the values (0.5 -> 0) instead of viewing their
# bits. AOT's eager-layout run now refuses a view(dtype) of memory written
# in place, and the graph runs op by op (compile/aot/eager_meta.cpp).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 2, (2, 3, 1), generator=g).bool()
    x1 = torch.randint(-4, 5, (2, 3, 4), generator=g)
    x2 = torch.randn((1, 3, 1), generator=g, dtype=torch.float64).expand(2, 3, 1)
    return [x0, x1, x2]

def fn(x0, x1, x2):
    v1 = x2.clamp(max=0.5)
    v2 = v1.abs_()
    v3 = v2.view(torch.int64)
    return {'v3': v3}
