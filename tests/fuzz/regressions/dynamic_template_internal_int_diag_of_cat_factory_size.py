# FIXED in round 25, by hand (the class of
# dynamic_template_internal_int_affine_fit_slice_sum): a WRONG VALUE on
# aot_eager and llvm on d1772ea. The diagonal's length of the (n0, 2 * n1)
# cat, min(n0, 2 * n1), fitted as n0 (capture and probes all had
# n0 < 2 * n1), is a factory's size inside the graph (`new_ones(k, 2)`);
# the output is a 0-d sum. Now (13, 5) and (11, 4) are captured.
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
    return (x0.new_ones(k, 2).cumsum(0).sum() + x0.sum(), )
