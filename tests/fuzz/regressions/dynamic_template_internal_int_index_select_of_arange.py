# FIXED in round 25, by hand (the class of
# dynamic_template_internal_int_affine_fit_slice_sum): a WRONG VALUE on
# aot_eager and llvm on d1772ea. k = min(n0, 2 * n1) fitted as n0 is the
# length of the index that index_select reads with; at (13, 5) the
# template summed 13 rows where eager sums 10.
# fuzz mode: --dynamic
import torch
LOG = []


def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n0, n1 = [(6, 4), (8, 7), (9, 5), (13, 5), (5, 3), (11, 4)][variant]
    x0 = torch.randn((n0, n1), generator=g, dtype=torch.float32)
    return [x0]


def fn(x0):
    k = torch.cat([x0, x0], 1).diagonal().shape[0]
    return (x0.sum(1).index_select(0, torch.arange(k)).sum(), )
