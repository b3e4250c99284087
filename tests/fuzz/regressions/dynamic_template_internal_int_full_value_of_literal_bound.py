# FIXED in round 25 (the session-25 review's tpl_full_value.py; a WRONG
# VALUE on aot_eager and llvm on d1772ea, per the review): an int used as a
# VALUE, not a size: `k = x0[:, :5].shape[1]` = min(n1, 5), fitted by the
# AOT size template as the literal 5 from points with n1 > 5, filled into
# `torch.full((2,), k)`. At n1 = 4 the template's graph filled 5. Each new
# size a template serves is now captured and compared node by node with the
# template's graph specialized for it (round 25, capture_misfit).
# fuzz mode: --dynamic
import torch
import torch.nn.functional as F
LOG = []


def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n1 = [9, 7, 11, 4, 13, 10][variant]
    x0 = torch.randn((3, n1), generator=g, dtype=torch.float32)
    return [x0]


def fn(x0):
    k = x0[:, :5].shape[1]
    return (torch.full((2,), k, dtype=torch.float32) + x0.sum(), )
