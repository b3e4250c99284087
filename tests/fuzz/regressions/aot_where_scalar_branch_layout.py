# OPEN until the fix of tests/regressions/33 lands (widened fuzzer, round
# 11, seed 8000635, shrunk): torch.where(x2 > 0, 1.5, c) with c laid out
# column-major (x2.double().mT.contiguous().mT): eager's result is
# row-major like the condition, strides (4, 1); aot_eager and llvm gave
# c's, (1, 2). Every backend must pass.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((3, 1), generator=g, dtype=torch.float32)[1:]
    x1 = torch.randn((2, 4), generator=g, dtype=torch.float32)
    x2 = torch.randn((2, 4), generator=g, dtype=torch.float64)
    x0.requires_grad_()
    return [x0, x1, x2]

def fn(x0, x1, x2):
    v3 = torch.where(x2 > 0, 1.5, x2.double().mT.contiguous().mT)
    return (v3,)
