# OPEN until the fix of tests/regressions/27 lands (widened fuzzer, round
# 11, seed 8005171 of an llvm-only run, shrunk): x2 (4, 4) is expanded from
# (4, 1); torch.clamp(x2, min=b) with b its float64 copy laid out
# column-major: eager's result is row-major, strides (4, 1); llvm's was
# b's, (1, 4) (eager and aot_eager are right). Every backend must pass.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 2, (8, 4), generator=g).bool()[::2]
    x1 = torch.randn((8, 4), generator=g, dtype=torch.float32)[::2]
    x2 = torch.randn((4, 1), generator=g, dtype=torch.float32).expand(4, 4)
    x3 = -2
    x1.requires_grad_()
    return [x0, x1, x2, x3]

def fn(x0, x1, x2, x3):
    v4 = torch.clamp(x2, min=x2.double().mT.contiguous().mT)
    return (v4,)
