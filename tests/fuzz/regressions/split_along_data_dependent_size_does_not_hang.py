# FIXED (round 17's campaign, static seed 9972054, a timeout on every
# backend, eager's included; shrunk by hand; hung on main's build of 5312a1e
# and on the campaign's build de80bf3): `x0[x0 > 0]` has a data-dependent
# size, which meta inference describes with the placeholder kUnbackedHint
# (20,643,840; graph/unbacked_sizes.h); `split(4)` of it on meta tensors
# made some five million views before the trace could go on (minutes, in
# effect a hang). A split or unbind along a data-dependent dim is now a
# data-dependent result (its number of results is known only when it
# runs): the graph breaks there with that reason and the call runs as eager
# (graph/meta_infer.cpp).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((3, 2, 1), generator=g, dtype=torch.float64)
    return [x0]

def fn(x0):
    v9 = x0[x0 != 0]
    LOG.append(len(v9))
    v15 = v9.split(6 // 2 + 1)[1]  # the seed's: 6 elements
    return (v9 * 2, v15, v9.unbind(0)[0])
