# FIXED in round 24, by hand (the affine class of the lead's round-23
# review): a WRONG VALUE, silently, on aot_eager and llvm on main's a90b1b9:
# at (13, 5) the output has 13 elements where eager's has 10, at (11, 4)
# 11 where eager's has 8.
# fuzz mode: --dynamic
# n = min(n0, 2 * n1), the diagonal's length of the (n0, 2 * n1) cat. The
# capture (6, 4) and the probes (10, 10), (12, 13), (14, 16) all have
# n0 < 2 * n1, so the view of the input `x0.flatten()[:n]` was fitted as n0
# elements. No guard covers a relation between a class and twice another
# (the order n0 vs n1 changes between the points), and 13 elements fit
# x0's storage. Now the template's geometries are checked against eager's
# at each new size (compile/aot/template_fit.h): (13, 5) and (11, 4) are
# captured; (8, 7), (9, 5), (5, 3) are served.
import torch
LOG = []


def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n0, n1 = [(6, 4), (8, 7), (9, 5), (13, 5), (5, 3), (11, 4)][variant]
    x0 = torch.randn((n0, n1), generator=g, dtype=torch.float32)
    return [x0]


def fn(x0):
    n = torch.cat([x0, x0], 1).diagonal().shape[0]
    return (x0.flatten()[:n], )
