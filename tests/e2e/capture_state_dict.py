"""Issue 42 (session 23): `load_state_dict` inside a compiled step, as the
DQN tutorial's target-network update does (`target_net.load_state_dict(
policy_net.state_dict())`, and its soft update `tau * p + (1 - tau) * t`
through the state dicts). Before, it broke at `is_lazy` (torch/nn/
parameter.py, under the skip policy) and then at `del load` (DELETE_DEREF
of load_state_dict's recursive closure); now one graph with no break,
targets equal eager's, no recompile over calls. A state dict with a missing
key raises eager's RuntimeError; `del` of a closure variable in an inlined
function empties its cell (a later read raises NameError, as eager)."""
import copy

import torch
import torch.nn as nn

import tracejit
from e2e_util import BACKEND, check, check_equal, finish, tensors_same

torch.manual_seed(0)
policy0 = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
target0 = copy.deepcopy(policy0)
with torch.no_grad():
    for p in target0.parameters():
        p.mul_(0.5)
TAU = 0.005
xs = [torch.randn(3, 4) for _ in range(4)]


def soft_update(policy, target, x):
    target_sd = target.state_dict()
    policy_sd = policy.state_dict()
    for key in policy_sd:
        target_sd[key] = policy_sd[key] * TAU + target_sd[key] * (1 - TAU)
    target.load_state_dict(target_sd)
    return target(x)


def hard_update(policy, target, x):
    target.load_state_dict(policy.state_dict())
    return target(x) * 2


for fn in (soft_update, hard_update):
    runs = []
    for compiled in (False, True):
        tracejit.reset()
        policy, target = copy.deepcopy(policy0), copy.deepcopy(target0)
        g = tracejit.compile(fn, backend=BACKEND) if compiled else fn
        outs = [g(policy, target, x) for x in xs]
        runs.append((outs, [t.clone() for t in target.state_dict().values()], tracejit.counters()["recompiles"]))
    want, got = runs
    check(tensors_same(got[0], want[0]), f"{fn.__name__}: outputs match eager over 4 calls")
    check(tensors_same(got[1], want[1]), f"{fn.__name__}: the target's state matches eager")
    check_equal(got[2], 0, f"{fn.__name__}: no recompile")
    ex = tracejit.explain(fn)(copy.deepcopy(policy0), copy.deepcopy(target0), xs[0])
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), f"{fn.__name__}: one graph, no break")


def load_missing(target, x):
    target.load_state_dict({"0.weight": target[0].weight.detach() * 2})
    return target(x)


try:
    tracejit.compile(load_missing, backend=BACKEND)(copy.deepcopy(target0), xs[0])
    raised = ""
except RuntimeError as e:
    raised = str(e)
check("Missing key(s)" in raised, "a state dict with missing keys raises eager's RuntimeError")


def deleted_closure(x):
    def helper(y):
        def rec(z, n):  # recursive: `rec` is a cell variable of helper
            return z if n == 0 else rec(z * 2, n - 1)
        out = rec(y, 2)
        del rec  # DELETE_DEREF
        try:
            rec(out, 1)
        except NameError:
            return out + 1
        return out
    return helper(x)


check(tensors_same(tracejit.compile(deleted_closure, backend=BACKEND)(xs[0]), deleted_closure(xs[0])),
      "del of a closure variable in an inlined function: a later call raises NameError, as eager")
ex = tracejit.explain(deleted_closure)(xs[0])
check(any("read before assignment" in b.reason for b in ex.break_reasons),
      "del of a closure variable: the read of the emptied cell breaks with that reason")

finish()
