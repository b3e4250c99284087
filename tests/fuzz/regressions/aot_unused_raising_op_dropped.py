# FIXED (found by the fuzzer, seeds 32, 38, 100100, 100449): under AOT
# an op whose result is unused was removed as dead code even when it
# raises in eager (integer division by zero): the exception, and the
# user's `except` branch, disappeared. AOT records on meta proxies, which
# cannot see such failures, and its functional graph keeps only what its
# outputs need. Now unused results are extra outputs of the graph AOT
# sees (graph/passes/unused_results.h, runtime/backend_step.cpp), dropped
# again after the run: the op runs and fails as in eager, the graph is
# rerun as the frame's bytecode, and the `except` catches it.
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
