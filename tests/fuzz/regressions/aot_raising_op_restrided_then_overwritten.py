# FIXED (found by the fuzzer, seed 4702887, shrunk): `x0 @ v2` of a bool
# (3,) and a (1,) tensor raises a size error in eager, inside `try`, so
# the helper returns `x0 + v2`, shape (3,); then `unsqueeze_(0)` and a
# `copy_` into it make the output (1, 3). The meta kernel of `dot` does not
# check the sizes, so the tracer records the matmul; under aot_eager and
# llvm the functional graph dropped it, as only the copy_ reads it, and
# with it the error that makes the graph fall back to the bytecode: the
# output came out (1,). unused_results' `only_overwritten` followed copy_
# into the result only; it now follows in-place restrides (`unsqueeze_`,
# `t_`, ...) too, and keeps a clone of the result as an extra output
# (graph/passes/unused_results.cpp).
import torch
LOG = []

def helper3(a, b):
    try:
        return a @ b
    except RuntimeError:
        return a + b

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 2, (3,), generator=g).bool()
    x1 = torch.randn((6,), generator=g, dtype=torch.float64)[::2]
    return [x0, x1]

def fn(x0, x1):
    v2 = x0[torch.tensor([0])]
    v4 = helper3(x0, v2)
    v5 = v4.unsqueeze_(0)
    v6 = v5.copy_(v2)
    return (v5,)
