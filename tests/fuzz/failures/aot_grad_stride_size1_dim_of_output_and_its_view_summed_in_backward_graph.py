# OPEN, expected to fail (written by hand in round 22, a variant of
# ../regressions/aot_grad_stride_size1_dim_of_intermediate_view_remade_by_as_strided
# with v2 returned too; fails on main's 0c52796 and after round 22's fix,
# aot_eager and llvm): x1.grad strides (1, 1) against eager's (1, 4) for a
# (4, 1) leaf laid out as a transposed (1, 4). v3 = v2.t() is now made
# again by its `t()` (view_of_output, replayed), so the view is not the
# cause. Eager's engine sums v2's gradient in ClampBackward's input buffer:
# v2's own (an expanded ones, arrived first) plus TBackward's (the
# transposed sum of v3's own and rsqrt's, dense), laid out from the dense
# one. The compiled call sums v2's own and the replayed TBackward's (both
# expanded: contiguous) in its node's input buffer, and its backward graph
# then adds rsqrt's contribution to that tangent (`add(tangents_2, t_1)`)
# laid out from the tangent. A fix would hand such a gradient over as its
# contributions in eager's order (as round 19's engine sums do for an
# input's), or add them in eager's order in the backward graph. Static
# 9994936 is of it (still failing; shrunk by the fuzzer in round 22 to
# `v3 = torch.stack([x0, x0]).transpose(0, -1)[0]; v5 = v3 * 0.5;
# return (v5, v3)`: eager sums v3's gradient in SelectBackward's buffer,
# the compiled call in its backward graph).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(-4, 5, (5, 1), generator=g)[1:]
    x1 = torch.randn((1, 4), generator=g, dtype=torch.float64).transpose(-1, -2)
    x1.requires_grad_()
    return [x0, x1]

def fn(x0, x1):
    v2 = torch.clamp(x0, max=x1)
    v3 = v2.t()
    v5 = v3.rsqrt() * 2
    return (v5, v2, v3)
