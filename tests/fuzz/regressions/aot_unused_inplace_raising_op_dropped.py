# FIXED (found by the slice, seed 21205): under AOT an in-place op that
# raises in eager (`relu_` of a bool tensor) on an intermediate nobody
# reads afterwards disappeared with its exception: functionalization
# turns it into a new value nobody uses, which the functional graph drops
# (the in-place form of aot_unused_raising_op_dropped). The last in-place
# op on such an intermediate is now an extra output of the graph AOT sees
# (graph/passes/unused_results.h), so it runs and fails as in eager.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((2, 4), generator=g)]


def fn(x0):
    v4 = torch.cat([x0 > 0, x0 > 0], 0)
    v4.relu_()
    return x0 + 1
