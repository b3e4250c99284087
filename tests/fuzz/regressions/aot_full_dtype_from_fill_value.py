# FIXED (2026-11-26, branch aotfix; found by the fuzzer, seed 31969, shrunk;
# llvm only): `torch.full((3,), 3)` is int64, but AOT capture recorded it
# with LibTorch 1.13's meta kernel, which says float32; the llvm backend
# allocates outputs from the recorded metas, so `v22 + v22` came back
# float32. Capture now infers a factory's dtype from its fill value as meta
# inference does (graph/meta_infer.cpp, infer_factory_dtype).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((3, 4, 4), generator=g, dtype=torch.float32)[1:]
    return [x0]

def fn(x0):
    v8 = torch.full((3,), 3)
    v22 = v8.narrow(0, 0, 1)
    v25 = v22 + v22
    return (v25,)
