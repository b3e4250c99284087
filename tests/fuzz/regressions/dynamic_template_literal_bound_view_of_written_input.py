# FIXED in round 24, by hand (the literal-bound class, for a view of an
# input the graph writes): a WRONG VALUE, silently, on aot_eager and llvm
# on main's a90b1b9: at (3, 4) the output has shape (2, 5) where eager's is
# (2, 4).
# fuzz mode: --dynamic
# `x0[:2, :5]` of the written x0 is made again by the wrapper from x0 with
# the geometry the AOT size template fitted: width 5 (n1 > 5 at the capture
# and every probe). The view fits x0's storage at (3, 4), and the only
# guard (n1 above the fixed size 3) holds. Now the template's geometries are
# checked against eager's at each new size (compile/aot/template_fit.h).
import torch
LOG = []


def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n1 = [9, 7, 11, 4, 13, 10][variant]
    x0 = torch.randn((3, n1), generator=g, dtype=torch.float32)
    return [x0]


def fn(x0):
    x0.add_(1)
    return (x0[:2, :5], )
