# FIXED (2026-11-26, branch aotfix; was an open defect found by the fuzzer, seed 20208): under AOT an in-place op
# whose functional form returns a new layout (lerp_, unlike mul_) on a
# non-contiguous view of an input, with the view returned: the output is
# regenerated with the strides of the functional result (1, 4) instead of
# the view's own (3, 12), so its values and strides differ from eager's.
# What was wrong: the output was regenerated from the functional value of the view,
# which after `lerp_` is the functional `lerp`'s contiguous result.
# AOT now takes eager's metadata from a run of the captured graph on meta
# tensors with eager's semantics (compile/aot/eager_meta.cpp).
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((2, 4, 3), generator=g, dtype=torch.float64)]


def fn(x1):
    v3 = x1.transpose(0, -1)[0]
    v3.lerp_(v3 * 1, 0.5)
    return (v3,)
