"""Issue 42: `torch.inference_mode()` in a compiled function.

- a block that begins before the graph's first tensor op (`with
  torch.inference_mode(): return model(x)`, the decorator): one graph with
  no break, run in inference mode, so its results are inference tensors
  as eager's (`is_inference()`), and grad mode is as before after it;
- tensor work after the block breaks the graph with that reason (it would
  run in inference mode): its results are normal tensors as eager's;
- a block after tensor work of the same graph breaks before it (the
  resume function runs inside the real block, and breaks again at its
  exit: a block entered before the graph is left by CPython);
- a break inside the block: the block is entered for real after the
  first graph and left by the resume function (inference tensors out,
  grad mode restored; the resume function breaks once more at the
  print(), and the module call after it is its own graph);
- `torch.inference_mode(False)`: a precise break (then CPython enters
  the block and leaves it: two more breaks, the model's graph between)."""
import io

import torch
import torch.nn as nn

import tracejit
from capture_util import same
from e2e_util import BACKEND, check, check_equal, finish

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
x = torch.randn(3, 8)


def whole(x):
    with torch.inference_mode():
        return model(x).softmax(-1)


@torch.inference_mode()
def predict(x):
    return model(x) * 2


def decorated(x):  # the decorator's wrapper (torch's code) is inlined into a caller
    return predict(x)


def after(x):
    with torch.inference_mode():
        y = model(x)
    z = y + 1  # breaks here (CPython runs the add)
    return z * 2  # the resume function's graph


def before(x):
    h = x * 2
    with torch.inference_mode():
        return model(h)


sink = io.StringIO()


def inside(x):
    with torch.inference_mode():
        y = model(x)
        print("between", file=sink)  # a graph break inside the block
        return model(y.tanh()[:, :8].repeat(1, 2)[:, :8])


def mode_false(x):
    with torch.inference_mode(False):
        return model(x)


def run(name, fn, graphs, breaks, reason=None):
    tracejit.reset()
    want = fn(x)
    grad_before = torch.is_grad_enabled()
    compiled = tracejit.compile(fn, backend=BACKEND)
    for call in range(2):  # the trace, then the cached graph
        got = compiled(x)
        check(same(got, want), f"{name}: call {call} matches eager")
        check_equal(got.is_inference(), want.is_inference(), f"{name}: call {call} is_inference() as eager")
        check_equal(got.requires_grad, want.requires_grad, f"{name}: call {call} requires_grad as eager")
        check_equal(torch.is_grad_enabled(), grad_before, f"{name}: call {call} leaves grad mode as it was")
        check(not torch.is_inference_mode_enabled(), f"{name}: call {call} leaves inference mode")
    ex = tracejit.explain(fn)(x)
    reasons = [r.reason for r in ex.break_reasons]
    check_equal((ex.graph_count, ex.graph_break_count), (graphs, breaks), f"{name}: graphs/breaks ({reasons})")
    if reason:
        check(any(reason in r for r in reasons), f"{name}: the break says '{reason}'")


run("whole block", whole, 1, 0)
run("decorator", decorated, 1, 0)
run("work after the block", after, 2, 1, "tensor work after a torch.inference_mode block")
run("block after work", before, 2, 2, "torch.inference_mode block after tensor work")
run("break inside the block", inside, 2, 2, "print()")  # the resume function breaks at print() again
run("inference_mode(False)", mode_false, 1, 3, "torch.inference_mode with a mode other than True")

# A module in training mode with a batch norm: its running statistics are
# updated in place inside the block as eager's are.
bn_model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8))
bn_eager = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8))
bn_eager.load_state_dict(bn_model.state_dict())


def bn_step(m, x):
    with torch.inference_mode():
        return m(x)


tracejit.reset()
compiled = tracejit.compile(bn_step, backend=BACKEND)
for _ in range(2):
    got, want = compiled(bn_model, x), bn_step(bn_eager, x)
check(same(got, want), "batch norm in training mode: output as eager")
check(same(bn_model[1].running_mean, bn_eager[1].running_mean), "batch norm: running_mean as eager")
check_equal(bn_model[1].num_batches_tracked.item(), 2, "batch norm: num_batches_tracked counted")

# TransformerEncoder's nested-tensor fast path (eval, no grad, a padding
# mask): the layers get a nested tensor, which has no sizes to guard; those
# frames run uncompiled with that reason, never as an internal error.
torch.manual_seed(0)
encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), 2).eval()
src = torch.randn(2, 5, 16)
pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])


def encode(src, pad):
    with torch.no_grad():
        return encoder(src, src_key_padding_mask=pad) * 2


tracejit.reset()
errors_before = tracejit.counters()["internal_errors"]
want = encode(src, pad)
got = tracejit.compile(encode, backend=BACKEND)(src, pad)
check(same(got, want), "nested-tensor fast path: matches eager")
ex = tracejit.explain(encode)(src, pad)
check_equal(tracejit.counters()["internal_errors"] - errors_before, 0, "nested-tensor fast path: no internal error")
text = str(ex)
check("internal error" not in text, "nested-tensor fast path: explain shows no internal error")
finish()
