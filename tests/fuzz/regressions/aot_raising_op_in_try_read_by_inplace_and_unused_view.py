# FIXED (found by the fuzzer in --dynamic mode, seed 2002770, shrunk, then
# by hand; failed the same way without --dynamic: the mode found it because
# only at some sizes does the rest of the program not raise): `v1 = x1 // 0`
# inside `try` (eager raises ZeroDivisionError, a RuntimeError, and the
# `except` prints), its result read only by `v1.add_(1)` and an unused
# `v1.reshape(-1, 7)`: under aot_eager and llvm the raising op was dropped,
# nothing was caught and the print was missing (the sibling of
# aot_unused_inplace_raising_op_dropped.py). The last in-place op on an
# intermediate now counts as its last use when only views nobody reads
# follow it (graph/passes/unused_results.cpp), so it stays an output.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x1 = torch.randint(-4, 5, (7,), generator=g)
    return [x1]

def fn(x1):
    try:
        v1 = x1 // 0
    except Exception as e:
        print('caught', repr(e)[:60])
        v1 = x1 * 2
    v1.add_(1)
    v4 = v1.reshape(-1, 7)
    return ()
