# OPEN, expected to fail (round 21's static campaign, seed 9995626, shrunk by
# hand; fails on main's 36c6481 too, aot_eager and llvm). A WRONG VALUE:
# x0 is an int64 (2, 1, 1) input with strides (2, 1, 1) (every other row
# of a (4, 1, 1) tensor); `x0.neg_()` then `x0.as_strided((2,), (1,))`
# reads storage elements 0 and 1, and element 1 is no element of x0:
# eager reads it unwritten ([4, 2]), the compiled call reads the negated
# second element of x0 ([4, -2]): the functional graph's as_strided runs
# on x0's new value laid out densely, not on x0's storage. Not analysed
# (round 21's deadline); an as_strided that reaches outside its input's
# elements would have to read the caller's storage (or run op by op).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(-4, 5, (4, 1, 1), generator=g)[::2]
    return [x0]

def fn(x0):
    x0.neg_()
    v3 = x0.as_strided((2,), (1,))
    return (v3 + 0,)
