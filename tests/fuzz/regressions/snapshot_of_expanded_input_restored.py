# FIXED (found by the fuzzer, seeds 502490, 502977, 504307, 505472, 505918;
# shrunk): an op failing inside a `try` in a graph that writes an expanded
# (self-overlapping) input: the input snapshot could not be copied back into
# the expanded tensor, so the frame was not rerun and eager's exception
# escaped the user's `except`. The snapshot now saves and restores the
# memory the tensor spans (runtime/input_snapshot.cpp).
import torch
LOG = []

def helper3(a, b):
    try:
        return a @ b
    except RuntimeError:
        pass

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(-4, 5, (1,), generator=g).expand(2)
    x1 = torch.randn((2,), generator=g, dtype=torch.float64)
    x2 = torch.randn((2,), generator=g, dtype=torch.float32).expand(2)
    return [x0, x1, x2]

def fn(x0, x1, x2):
    v4 = helper3(x2, x0)
    x0.fill_(3)
    return ()
