# FIXED (found by the fuzzer in --dynamic mode, seed 2001579, shrunk, then
# by hand; failed the same way without --dynamic): under llvm only, `v1 =
# x0 * 2; x0.copy_(v1); v1.unsqueeze_(0); return v1` returned a v1 that
# shared the input x0's storage (eager: a fresh tensor; values were right).
# The kernel computing v1 wrote it straight into x0 (the write-back's
# donation, jit/lowering.cpp plan_donations) although a view of it was
# also returned; a value another result views is not donated now.
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
