# OPEN DEFECT (found by the fuzzer, seeds 91, 100058, 100138): an op that
# fails at run time inside a `try` whose graph also writes an input (or is
# an in-place op on a leaf that requires grad) escapes the user's `except`:
# the graph fails, is not rerun because it may have written an input, and
# eager's exception is raised at the frame instead of inside the try.
# All backends. Expected to fail until the runtime handles it.
import torch
LOG = []


def helper(a, b):
    try:
        return a @ b
    except RuntimeError:
        pass


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2, 2), generator=g, dtype=torch.float64)
    x1 = torch.randn((4,), generator=g, dtype=torch.float32)[::2]
    x2 = torch.randn((3,), generator=g).requires_grad_()
    return [x0, x1, x2]


def fn(x0, x1, x2):
    v1 = helper(x1, x0)
    x1 *= 2
    try:
        x2.add_(1)
    except RuntimeError as e:
        print("caught", e)
    return (v1, x2 * 2)
