# FIXED (2026-11-26, branch aotfix; found by the fuzz slice, seed 21205,
# shrunk by hand): `relu_()` of a bool tensor raises in eager ("Boolean
# inputs not supported for relu"), but the meta rules of relu/abs/hardtanh
# (graph/meta_infer.cpp) accepted bool, so the call was traced; under AOT
# its unused functional result was dead code and the exception vanished.
# The rules now raise the CPU kernels' errors for bool tensors, so tracing
# stops there and the op raises as in eager.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((2, 3), generator=g), torch.randint(0, 2, (1, 3), generator=g).bool()]


def fn(x0, x1):
    v3 = x0 * 2
    v4 = torch.cat([x1, x1], 0)
    v4.relu_()
    return v3
