# FIXED (found by the fuzzer in --dynamic mode, seed 2000063, shrunk by
# hand; failed the same way without --dynamic): `x0.view(torch.int64)
# .detach_()` of a float64 input: in eager a dtype view that changes to an
# integer type is no autograd view, so detach_ is allowed; under aot_eager
# and llvm it raised "Can't detach views in-place" (the graph's output
# sharing the input's memory came back as a view of it; the sibling of
# regressions/aot_detach_inplace_of_view.py). Outputs made by view(dtype)
# to an integer or bool type are now detached after AOT's wrapper, as
# detach()'s are (compile/aot/boundary.cpp).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((3,), generator=g, dtype=torch.float64)]

def fn(x0):
    v1 = x0.view(torch.int64)
    v1.detach_()
    return ()
