# FIXED (found by the slice, seed 21199, once `detach_(` was no longer
# left out of it): under AOT an intermediate changed in place by a
# metadata op (`v1.unsqueeze_(0)`) and live at a graph break came back as
# an autograd view of AOT's intermediate (functionalization records
# unsqueeze_ as a view, and the wrapper regenerates it with as_strided),
# where eager's is a tensor of its own: the `detach_()` after the break
# raised "Can't detach views in-place". Outputs that eager makes as no
# view (a new tensor, changed only in place) and AOT returns as a view of
# an intermediate not requiring grad are now detached
# (compile/aot/boundary.h).
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((2, 1), generator=g, dtype=torch.float32)[1:]]


def fn(x0):
    v1 = torch.isnan(x0)
    v1.unsqueeze_(0)
    v1.detach_()
    return (v1, x0 + 1)
