# FIXED (found by the fuzzer, seed 20008): a graph that writes an input
# and then fails (here log_softmax of a bool tensor, which only the CPU
# kernel rejects) lost the Python side effects traced before the failing
# op (LOG.append) and eager's exception. On the eager backend the runtime
# already put the written input back and reran the frame; under AOT the
# failing op's unused result was dropped (aot_unused_raising_op_dropped),
# so nothing was raised at all. Unused results are now kept
# (graph/passes/unused_results.h): the functional graph fails before any
# input is written, and the frame reruns as eager.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((3, 2, 1), generator=g, dtype=torch.float64)]


def fn(x0):
    v1 = x0 == x0
    LOG.append(v1.shape)
    x0.zero_()
    v16 = torch.log_softmax(v1, -1)
    return []
