# FIXED (round 26; round 25's --dynamic campaign on the landed code, seed
# 9996558, unshrunk; llvm only): `x0.sum()` of a float32 input expanded
# from (n0, 1) to (n0, n1) differed from eager's by more than
# tracejit.same's float32 tolerance (5.0537176 against 5.0537443); by hand,
# llvm's sum was 28x further from the float64 sum than eager's. Cause: a
# strided kernel's (loop nest's) innermost dim summed its blocks of up to
# 2,048 elements in float32, and a stride-0 or strided innermost loop is
# left scalar by the vectorizer: one serial chain of float adds. Fixed in
# src/jit/llvm_reduce.cpp: there a float32 sum's block accumulates in
# double (each element widened before its add); the flat entry's
# vectorized blocks stay float32. tests/e2e/llvm_sum_accuracy.py covers
# the other shapes (strided, transposed, non-innermost dims, mean, fused).
# wrong:value under backend 'llvm'
# fuzz mode: --dynamic
# [dynamic=True, variant 1, inputs 11] out[0]: values differ
#   eager:    5.053717613220215
#   compiled: 5.053744316101074
# [dynamic=True, variant 1, inputs 11] out[4]: values differ
#   eager:    5.053717613220215
#   compiled: 5.053744316101074
# [dynamic=None, variant 1, inputs 11] out[0]: values differ
#   eager:    5.053717613220215
#   compiled: 5.053744316101074
# tracejit fuzz program, seed 9996558
import torch

LOG = []


def helper1(*args):
    return sum(t.sum() for t in args)


def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n0, n1 = [(2, 3), (5, 30), (3, 6), (7, 2), (4, 7), (25, 4)][variant]
    x0 = torch.randn((n0, 1), generator=g, dtype=torch.float32).expand(n0, n1)
    x1 = torch.randn((n0 * 2, n1), generator=g, dtype=torch.float64)[::2]
    x2 = torch.randn((n0 + 1, 0), generator=g, dtype=torch.float64)[1:]
    return [x0, x1, x2]


def fn(x0, x1, x2):
    print('p', x1.stride(), x1.is_contiguous())
    v2 = helper1(x0, x2)
    v2.detach_()
    print('p', x1.long().tolist())
    s3 = float(v2.sum())
    try:
        v0 = v2 * 2
        v4 = x0.expand(3, 7)
    except Exception as e:
        print('caught', isinstance(e, RuntimeError))
        v4 = torch.neg(x2)
    return (v2, v4, x0, s3, v2, )
