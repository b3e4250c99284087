# OPEN (found by the fuzzer in --dynamic mode, seed 2001579, shrunk, then by
# hand; fails the same way without --dynamic): under llvm only, `v1 = x0 * 2;
# x0.copy_(v1); v1.unsqueeze_(0); return v1` returns a v1 that shares the
# input x0's storage (eager: a fresh tensor; values are right). Without the
# unsqueeze_ it passes; aot_eager passes.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((3,), generator=g, dtype=torch.float32)]

def fn(x0):
    v1 = x0 * 2
    x0.copy_(v1)
    v1.unsqueeze_(0)
    return (v1,)
