# FIXED (2026-11-26, branch aotfix; was an open defect found by the fuzzer, seed 20297): under AOT `v += v` on a
# one-element slice of a stride-0 expand of a 0-d input writes the input
# three times its value where eager doubles it.
# What was wrong: functionalization's reverse of `expand` sums the broadcast
# copies. Writes through self-overlapping views now fall back to the
# captured graph.
# (compile/aot/eager_meta.cpp finds such writes.)
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((), generator=g, dtype=torch.float32)]


def fn(x0):
    v3 = x0.expand(2, *x0.shape)
    v16 = v3.split(1, 0)[0]
    v16 += v16
    return ()
