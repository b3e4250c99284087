# FIXED (found by the fuzzer, seeds 115, 100086): under AOT
# `x.detach().detach_()` raised "Can't detach views in-place" where eager
# does not. detach_ breaks the graph, whose output is `x.detach()`; eager's
# detach() shares x's memory but is no autograd view and never requires
# grad, while AOT regenerates an output sharing an input's memory as
# `as_strided` of it: a view (and, for an input requiring grad, a tensor
# requiring grad). Outputs the captured graph makes with detach() are now
# detached after AOT's wrapper (compile/aot/boundary.h); a graph with
# detach_ itself runs as captured.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((3,), generator=g)]


def fn(x0):
    v1 = x0.detach()
    v2 = v1.detach_()
    return (v2 * 2,)
