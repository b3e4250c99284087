# FIXED in round 21 (the lead, after the campaign): round 21's `--dynamic`
# campaign, seed 9976373, shrunk by the fuzzer; failed on main's 36c6481
# on aot_eager and llvm. A WRONG GRADIENT: x0.grad came back all zeros at
# the sizes served by the size template's one program.
# fuzz mode: --dynamic
# x0 is a (1, n) leaf; the graph computes `v3 = (x0 + x0).reciprocal()`
# (read after the break at `print` only by a raising `item()`, its tangent
# absent in the backward) and `v4 = x0 @ x0.T`, the loss reads v4 only.
# x0's gradient is handed over as four parts (round 19's engine sums): two
# from v3's tangent, two from v4's, so the compiled backward is two nodes
# (round 20's output groups, CompiledFunctionBackwardPart over one node).
# From the fifth size on the size template's one program serves the call,
# and its plan has no per-tangent saved sets (Plan::tangent_saved: no
# backward graph was made for the size). The engine reached v3's part
# with no gradient and released it; without the sets the release freed
# every saved value although v4's tangent was still to come, so v4's part
# ran on the zeros that stand for freed values. Now a release keeps
# everything while a tangent is pending where the plan has no sets
# (compile/aot/backward_node.cpp, release_variables). The suite's
# TRACEJIT_DEBUG_CHECK_AOT_TEMPLATES=1 completes the plan by a capture and
# hides the defect: this program's test runs with it off
# (tests/fuzz/meson.build, fuzz_unchecked_templates).
import torch
LOG = []

def helper1(a, b):
    return a + b

def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n1, = [(2,), (7,), (39,), (4,), (11,), (20,)][variant]
    x0 = torch.randn((1, n1), generator=g, dtype=torch.float32).expand(1, n1)
    x0.requires_grad_()
    return [x0]

def fn(x0):
    v2 = helper1(x0, x0)
    v3 = v2.reciprocal()
    v4 = x0 @ x0.transpose(-1, -2)
    try:
        print('before', v3.dim())
        v6 = v3.item()
    except Exception as e:
        pass
    return (v4,)
