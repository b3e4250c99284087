# FIXED (found by the fuzzer, seeds 91, 100058, 100138): an op that fails
# at run time inside a `try` (here a float32 @ float64 matmul in an
# inlined helper), in a graph that also writes an input (x1 *= 2) and a
# leaf that requires grad (x2.add_, which eager rejects inside its own
# try), escaped the user's `except` on every backend: the runtime would
# not rerun a graph that may write an input requiring grad, so eager's
# exception was raised at the frame. Now the runtime snapshots what the
# graph may write before it runs (runtime/input_snapshot.h: data of the
# inputs, their metadata when the graph changes it, the version counter
# of those requiring grad), puts it back on failure and reruns the frame
# as eager's bytecode; an input requiring grad that was really written
# (its version moved) still cannot be undone and is not rerun.
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
