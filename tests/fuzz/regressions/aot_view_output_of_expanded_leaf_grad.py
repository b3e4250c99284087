# OPEN until the fix of tests/regressions/29 lands (widened fuzzer, round
# 11, seed 8000258, shrunk): x1 (4, 1) is expanded from (1, 1) (stride 0)
# and requires grad; the output is chunk(2, -2)[-1], a view of it. Eager's
# x1.grad is [0, 0, 1, 1]; aot_eager and llvm gave 0.5 everywhere. Every
# backend must pass.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(-4, 5, (5, 1), generator=g)[1:]
    x1 = torch.randn((1, 1), generator=g, dtype=torch.float32).expand(4, 1)
    x2 = torch.randn((1, 4), generator=g, dtype=torch.float64).transpose(-1, -2)
    x3 = -2
    x1.requires_grad_()
    return [x0, x1, x2, x3]

def fn(x0, x1, x2, x3):
    v2 = x1.chunk(2, -2)[-1]
    return [v2]
