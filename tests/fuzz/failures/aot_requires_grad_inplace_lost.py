# OPEN DEFECT (found by the fuzzer, seeds 2, 60, 188, 100149): under AOT
# (aot_eager, llvm) `t.requires_grad_()` inside the compiled function is
# lost: on an input the caller's tensor does not require grad afterwards,
# on an intermediate the returned tensor does not. Expected to fail.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((2, 3), generator=g), torch.randn((3,), generator=g)]


def fn(x0, x1):
    x0.requires_grad_()
    v1 = x1.amax(-1)
    v1.requires_grad_()
    return (v1,)
