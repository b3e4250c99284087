# OPEN, expected to fail (round 18's `--dynamic` seed 9963230, shrunk by the
# fuzzer in round 21; fails statically too, on main's 36c6481 and on round
# 21's relay fix): x1 is a (4, 1) leaf with strides (1, 4) (a transposed
# (1, 4)); the graph returns `v3 = clamp(x0, max=x1).t()` and
# `v3.rsqrt() * 2`. Eager's x1.grad has strides (1, 4), the compiled one
# (1, 1) (aot_eager, llvm; values equal).
# Not the arrival-order class it was filed under (rounds 19/20): v3 is a
# view of an intermediate (OutputKind::view_of_intermediate), which AOT's
# wrapper makes again with as_strided on the base v2; as_strided's
# backward hands v2 its gradient in v2's layout ((4, 1), strides (1, 1)),
# eager's `t()` hands on the transposed (1, 4) gradient, strides (1, 4).
# The backward graph's `add(tangents_2, t_1)` and clamp's `where` then lay
# x1's gradient out from that operand (eager: `v2.t()` against
# `v2.as_strided((1, 4), (1, 1))` gives x1.grad strides (1, 4) against
# (1, 1)). A fix would make such a view again by its view ops from the
# base, as view_of_input outputs already are (OutputInfo::replay).
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
    return (v5, v3)
