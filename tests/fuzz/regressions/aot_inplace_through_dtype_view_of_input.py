# FIXED (2026-11-26, branch aotfix; found by the fuzzer, seed 30083, shrunk,
# once the view(torch.int64) programs were no longer excluded): `clamp_` on
# `x0.view(torch.int64)` (transposed) of a float64 input. LibTorch 1.13's
# functionalization gives the input its new value in the view's dtype
# (int64), and the epilogue's copy_ converted the integers to float64 where
# eager reinterprets the bits. Writes through a view of another dtype now
# fall back to the captured graph (compile/aot/eager_meta.cpp).
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2, 4), generator=g, dtype=torch.float64)[::2]
    return [x0]


def fn(x0):
    v1 = x0.view(torch.int64)
    v2 = v1.transpose(-1, 1)
    v2.clamp_(min=0)
    return []
