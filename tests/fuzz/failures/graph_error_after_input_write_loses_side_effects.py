# OPEN DEFECT (found by the fuzzer, seed 20008): a graph that writes an
# input and then fails (here log_softmax of a bool tensor) is not rerun,
# and the Python side effects traced before the failing op (LOG.append)
# are lost; eager made them before raising. Same mechanism as
# try_except_graph_error_with_input_mutation. Under AOT the failing op's
# unused result is also dropped (aot_unused_raising_op_dropped), so
# nothing is raised at all. Expected to fail.
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
