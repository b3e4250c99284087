# FIXED (the unused-results pass of the rtfix merge keeps it; was OPEN DEFECT (found by the fuzzer, seed 32451, shrunk; aot_eager and llvm):
# `round()` of a bool tensor raises in eager ("round_vml_cpu" not
# implemented for 'Bool'), but its meta kernel accepts bool, so the call is
# traced, and under AOT its unused result is dead code: the exception
# vanishes. Seed 33693 is the same with `bool.floor_divide_(2)` ("result
# type Long can't be cast to the desired output type Bool", a check the
# functional floor_divide does not make). Likely the same defect as
# aot_unused_raising_op_dropped (an op that raises must not be dropped),
# here with errors that depend on dtypes, not values. Expected to fail.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((), generator=g, dtype=torch.float32)
    x1 = torch.randn((), generator=g, dtype=torch.float32)
    return [x0, x1]

def fn(x0, x1):
    v1 = x0 != 0
    v8 = v1.round()
