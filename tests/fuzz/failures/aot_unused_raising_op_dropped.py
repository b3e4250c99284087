# OPEN DEFECT (found by the fuzzer, seeds 32, 38, 100100, 100449): under
# AOT an op whose result is unused is removed as dead code even when it
# raises in eager (integer division by zero): the exception, and the
# user's `except` branch, disappear. Expected to fail.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(-4, 5, (3,), generator=g)]


def fn(x0):
    try:
        v1 = x0 // 0
    except RuntimeError as e:
        print("caught", e)
    return (x0 + 1,)
