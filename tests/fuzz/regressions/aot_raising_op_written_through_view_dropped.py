# FIXED (found by the fuzzer in --dynamic mode, seed 4400256, shrunk, then
# by hand; failed the same way without --dynamic): an integer division by
# zero inside `try` (eager raises a RuntimeError and the `except` prints)
# whose result was then only written through views (`v[0] = x`,
# `v.t()[1].add_(3)`) and never read: under aot_eager and llvm the
# functional writes were new values nobody used, dead code removed them
# and the division with them, so nothing was caught. The last in-place op
# on an intermediate now counts as its last use through views of it too
# (graph/passes/unused_results.cpp, last_write_of_intermediate).
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((1, 2, 3), generator=g).expand(1, 2, 3), torch.randint(0, 2, (1, 2, 3), generator=g).bool(),
            torch.randint(-4, 5, (2, 3), generator=g)]


def fn(x0, x1, x2):
    try:
        v9 = x1 // 0
    except Exception as e:
        print('caught', isinstance(e, RuntimeError))
        v9 = x0.clone()
    v9[0] = x0
    try:
        v = x2 // 0
    except Exception as e:
        print('caught', type(e).__name__)
        v = x2 * 2
    v.t()[1].add_(3)
    try:
        w = x2 // 0
        w[0] = x2[1]
        y = x0 * 2
    except Exception as e:
        print('caught', type(e).__name__)
        y = x0 * 3
    return (y,)
