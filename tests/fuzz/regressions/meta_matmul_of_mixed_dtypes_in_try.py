# FIXED (found by the fuzzer, seeds 3503910 and 3502532, shrunk; eager
# backend): `a @ b` of a float32 and a float64 tensor inside a helper's
# `try` after `x0.relu_()` of an input. Eager raises "expected scalar type
# Float but found Double" and the `except` catches it; LibTorch 1.13's meta
# mm (what matmul becomes on meta) does not compare the dtypes, so the
# matmul was traced into the graph, which failed at run time after writing
# x0, and the exception escaped. Meta inference now raises eager's error
# for mm, bmm, mv, dot, matmul and the add* forms of mixed dtypes, and the
# tracer breaks the graph there (graph/meta_infer.cpp, eager_only_checks).
import torch
LOG = []

def helper3(a, b):
    try:
        return a @ b
    except RuntimeError:
        pass

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((3, 2), generator=g, dtype=torch.float64)[1:]
    x1 = torch.randint(0, 2, (0,), generator=g).bool()
    x2 = torch.randn((2, 2), generator=g, dtype=torch.float32).transpose(-1, -2)
    x3 = -2
    return [x0, x1, x2, x3]

def fn(x0, x1, x2, x3):
    v2 = x0.relu_()
    v4 = helper3(x2, v2)
    return ()
