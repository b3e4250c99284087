# FIXED (found by the fuzzer, seeds 2, 60, 188, 100149): under AOT
# (aot_eager, llvm) `t.requires_grad_()` inside the compiled function was
# lost: on an input the caller's tensor did not require grad afterwards,
# on an intermediate the returned tensor did not. A functional graph
# cannot make a tensor start requiring grad (functionalization records
# no such op); a graph with requires_grad_ now runs as captured, op by op
# (compile/aot/boundary.h: a logged fallback counted in backend_fallbacks).
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
