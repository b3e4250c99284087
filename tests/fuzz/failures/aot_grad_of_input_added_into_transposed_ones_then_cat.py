# OPEN, expected to fail (round 22's static campaign, seed 10001410, not
# shrunk; fails on main's 0c52796 too, aot_eager and llvm; eager passes).
# A WRONG GRADIENT: x0.grad [[[1, 1, 1]]] against eager's [[[3, 3, 3]]]
# (and strides (6, 3, 1) against (3, 3, 1)), and out[0] (`v5 = v2.T`, v2 =
# `ones_like(x0) * 3`, later `v2.add_(x0)`) requires grad in eager, not in
# the compiled call.
# Diagnosis (the lead, after round 22's merge; not fixed): count_nonzero
# breaks the graph, so graph 1 returns v2 (fresh, `ones_like(x0) * 3`)
# and v5 = v2.T, and the resumed code writes v2.add_(x0). Compiled with
# grad (x0 requires grad), v5._base is not the v2 returned (it is on
# e5840ca already): AOT's joint wrapper returns v2 as an autograd view of
# another tensor, which compile/aot/boundary.cpp's with_eager_outputs
# replaces by a detached tensor (OutputFix::no_view: eager's `mul` result
# is no view), while v5 stays a view of the tensor before that. Eager's
# in-place add_ on v2 rebases v5 onto v2's new history (v5 requires grad,
# x0.grad gets v5's part); compiled, v5 keeps no history. Smallest form:
#   def g1(x0): v2 = torch.ones_like(x0) * 3; return v2, v2.T
#   v2, v5 = compiled(g1)(x0 requiring grad); v5._base is v2 -> False
# A fix: outputs AOT made as views of an output the boundary detaches are
# made again as views of the detached tensor (or the wrapper returns v2
# as no view in the first place).
import torch

LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2, 1, 3), generator=g, dtype=torch.float32)[::2]
    x1 = torch.randint(0, 2, (6, 1, 3), generator=g).bool()[::2]
    x0.requires_grad_()
    return [x0, x1]


def fn(x0, x1):
    u1 = x0.log10()
    v2 = torch.ones_like(x0) * 3
    v4 = x1.sin()
    if x1.dtype == torch.float32:
        v5 = x0.masked_fill(x0 > 0, -1)
    else:
        v5 = v2.T
    v6 = v5.count_nonzero(0)
    v2.add_(x0)
    v7 = torch.cat((v2.flatten(), v5.flatten()))
    v8 = x1.contiguous()
    return (v5, v7, )
