# OPEN, expected to fail (static 9994936 as round 22's fuzzer shrank it,
# written out in round 25; fails on main's d1772ea and after round 25's
# fix, aot_eager and llvm): x0.grad (1, 1) against eager's (1, 3) for a
# (3, 1) leaf laid out as (1, 3). v3 = stack([x0, x0]).transpose(0, -1)[0]
# (a replayed view of an intermediate) is returned and read by `v3 * 0.5`.
# Round 25 gives v3 its own tangent (its own and the mul's gradients are
# now summed in the recorded SelectBackward buffer, as eager's engine
# does), which fixed the view-of-output programs beside it but not this
# one. Eager: select_backward lays v3's summed gradient out in a fresh
# (1, 3, 2) tensor, the transpose and unbind give x0 two (3, 1) views with
# strides (2, 6), and the engine's sum of the two is laid out (1, 3).
# Not analysed further (time). A likely cause, not checked: the stack's
# result (the view's intermediate base, an extra forward output) keeps its
# own tangent, absent at run time (no caller holds the base), so the
# recorded backward adds it to the transposed select_backward in the stack
# node's buffer (`add(tangents_base, ...)`, an engine sum eager never
# makes), and the backend's contiguous sum, unbound, gives two (1, 1)
# contributions; eager_layouts (backward_node.cpp) infers the layouts with
# that sum in. The base needs its tangent (an in-place op on the view
# rebases the view's history onto its base's); the inference could drop an
# engine sum's operand that reads only absent tangents, as
# gradients_passed_on_without does for passed-on gradients.
import torch

LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((1, 3), generator=g, dtype=torch.float64).t()
    x1 = torch.randn((1, 3), generator=g, dtype=torch.float64).t()
    x0.requires_grad_()
    x1.requires_grad_()
    return [x0, x1]


def fn(x0, x1):
    v3 = torch.stack([x0, x0]).transpose(0, -1)[0]
    v5 = v3 * 0.5
    return (v5, v3)
