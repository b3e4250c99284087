# FIXED (by the eager meta run of the aotfix merge; was OPEN DEFECT (found by the fuzzer, seed 40397, shrunk): under AOT
# (aot_eager, llvm) an in-place op on a returned view of an intermediate
# (`v5.transpose(0, -1)[0]`, through a helper) comes back with other
# strides ((1, 4) where eager's are (2, 8)) and wrong values: the view is
# regenerated on the functional graph's new value of the intermediate,
# whose layout is not eager's. The same family as
# aot_inplace_on_view_of_intermediate_strides (AOT alias/stride defects).
# Also with `x0.float() * 0` in place of `x0 // 2`. Seed 61535 is the
# same defect: `v3 = square(x0).unbind(-1)[0]; v3.add_(n)` returned (or
# read later) comes back with strides (1,) where eager's are (3,), and
# wrong values. AOT's capture takes the view's geometry from the
# functional value after the in-place op (a new contiguous tensor), not
# from the view eager made (the `aot_graphs` log says `view_of_intermediate
# 0 as [4] strides [1]`). Expected to fail.
import torch
LOG = []


def helper8(a):
    return a.transpose(0, -1)[0]


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 2, (1, 4, 2), generator=g).bool()
    x1 = torch.randint(-4, 5, (), generator=g)
    return [x0, x1]


def fn(x0, x1):
    v5 = x0 // 2
    v9 = helper8(v5)
    v9.add_(x1)
    return v9
