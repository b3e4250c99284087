"""Issue 42: idioms of the public-style probes (tests/probes) traced whole:
- `x.requires_grad = True` on a tensor that does not require grad
  (wav2vec2's feature extractor on a view of its input): traced as
  `requires_grad_()`, in inference and as a training step; what eager
  raises on (a non-leaf, an integer tensor) breaks the graph and CPython
  raises the same error;
- a loss module built in the frame with tensor arguments
  (`nn.BCEWithLogitsLoss(pos_weight=torch.tensor([...]))` in YOLO's loss,
  `nn.CrossEntropyLoss(weight)` positionally, a weight read from an input);
- numpy arrays made from constants (PointNet's
  `torch.from_numpy(np.array([...]).astype(np.float32))`, `np.eye`, ufuncs
  on arrays, `torch.tensor(array, dtype=)`), while an array read from an
  input is never folded (its values change between calls), numpy.random is
  not folded and a numpy array does not leave the graph;
- `torch.ops.<namespace>.<op>(...)` (an OpOverloadPacket: torchvision's
  `nms` and `roi_align` through `torchvision.ops`, `torch.ops.aten.*`)
  routed to the op in the graph;
- `Tensor.item()` whose number is never read (CleanRL PPO's
  `clipfrac = (...).item()` kept for logging, a bare `loss.item()`) costs no
  graph break without `capture_scalar_outputs`; a number that is read
  still breaks there."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from capture_util import expect, same
from e2e_util import BACKEND, check, check_equal, finish, tensors_same

torch.manual_seed(0)


def train_as_eager(name, step, make_model, make_opt, batch, graphs, breaks):
    """Three steps of `step(model, opt, *batch)` eagerly and compiled from
    equal models: losses and parameters as eager's; the explain of one more
    compiled step (returned)."""
    eager_model = make_model()
    comp_model = make_model()
    comp_model.load_state_dict(eager_model.state_dict())
    eager_opt, comp_opt = make_opt(eager_model.parameters()), make_opt(comp_model.parameters())
    tracejit.reset()
    compiled = tracejit.compile(step, backend=BACKEND)
    losses_e = [step(eager_model, eager_opt, *batch) for _ in range(3)]
    losses_c = [compiled(comp_model, comp_opt, *batch) for _ in range(3)]
    check(tensors_same(losses_c, losses_e, rtol=1e-5, atol=1e-6), f"{name}: losses as eager")
    check(tensors_same(list(comp_model.parameters()), list(eager_model.parameters()), rtol=1e-5, atol=1e-6),
          f"{name}: parameters as eager")
    ex = tracejit.explain(step)(comp_model, comp_opt, *batch)
    check_equal((ex.graph_count, ex.graph_break_count), (graphs, breaks),
                f"{name}: graphs/breaks ({[r.reason for r in ex.break_reasons]})")
    return ex


# --- x.requires_grad = True ------------------------------------------------


class FeatureExtractor(nn.Module):
    def __init__(self):
        super().__init__()
        # A linear layer, not wav2vec2's Conv1d: LibTorch 1.13's conv1d
        # backward gives eager itself garbage weight gradients when its input
        # requires grad here (nan, 1e25; two eager runs differ).
        self.lin = nn.Linear(40, 4)
        self.proj = nn.Linear(4, 3)

    def forward(self, wav):
        hidden = wav[:, None]
        if self.training:
            hidden.requires_grad = True
        hidden = F.gelu(self.lin(hidden))
        return self.proj(hidden), hidden


def feature_requires_grad(model, wav):
    out, hidden = model(wav)
    return out, hidden.requires_grad


fe = FeatureExtractor()
wav = torch.randn(2, 40)
ex = expect("x.requires_grad = True (a view of the input)", feature_requires_grad, (fe, wav))
tracejit.reset()
out, _ = tracejit.compile(feature_requires_grad, backend=BACKEND)(fe, wav)
check(out.requires_grad and out.grad_fn is not None, "x.requires_grad = True: the output requires grad as eager's")


def set_on_input(x):
    x.requires_grad = True
    return (x * 2).sum(), x.requires_grad


x_eager = torch.randn(3)
x_comp = x_eager.clone()
tracejit.reset()
want = set_on_input(x_eager)
got = tracejit.compile(set_on_input, backend=BACKEND)(x_comp)
check(same(got[0].detach(), want[0].detach()) and got[1] is True, "x.requires_grad = True on an input: value as eager")
check(x_comp.requires_grad and x_comp.is_leaf, "x.requires_grad = True on an input: the caller's tensor requires grad")
got[0].backward()
check(tensors_same(x_comp.grad, torch.full((3,), 2.0)), "x.requires_grad = True on an input: its grad after backward")


def set_false(x):
    y = x * 3
    y.requires_grad = False  # a leaf that does not require grad: nothing changes
    return y + 1


expect("x.requires_grad = False on a tensor that does not require grad", set_false, (torch.randn(4),))


def non_leaf(w):
    y = w * 2
    y.requires_grad = True  # eager raises: only leaves
    return y


def int_tensor(x):
    i = (x > 0).long()
    i.requires_grad = True  # eager raises: integer tensors cannot require grad
    return i


for name, fn, arg in [("a non-leaf", non_leaf, lambda: torch.randn(3, requires_grad=True)),
                      ("an integer tensor", int_tensor, lambda: torch.randn(3))]:
    tracejit.reset()
    try:
        fn(arg())
        want = None
    except RuntimeError as e:
        want = str(e)
    try:
        tracejit.compile(fn, backend=BACKEND)(arg())
        got = None
    except RuntimeError as e:
        got = str(e)
    check(want is not None and got == want, f"x.requires_grad = True on {name}: raises as eager ({got!r})")


def fe_step(model, opt, wav):
    out, _ = model(wav)
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach()


torch.manual_seed(1)
# The traced backward keeps no .grad of a leaf made in the frame (`hidden`):
# it breaks before loss.backward(), and CPython runs it.
ex = train_as_eager("requires_grad training step", fe_step, FeatureExtractor,
                    lambda p: torch.optim.SGD(p, lr=0.1), (wav,), 2, 1)
check("a tensor made to require grad in the frame" in ex.break_reasons[0].reason,
      "requires_grad training step: the break before backward names the leaf made in the frame")

# --- loss modules built in the frame from tensors ----------------------------

logits, target = torch.randn(4, 5), torch.rand(4, 5)
labels = torch.tensor([0, 3, 1, 4])


def bce_pos_weight(p, t):
    bce = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))
    return bce(p, t) + bce(p * 2, t)


def ce_positional_weight(p, y):
    return nn.CrossEntropyLoss(torch.tensor([1.0, 2.0, 0.5, 1.0, 3.0]), label_smoothing=0.1)(p, y)


def nll_input_weight(p, y, w):
    return nn.NLLLoss(weight=w, reduction="sum")(p.log_softmax(-1), y)


expect("nn.BCEWithLogitsLoss(pos_weight=torch.tensor(...)) made in the frame", bce_pos_weight, (logits, target))
expect("nn.CrossEntropyLoss(weight) positionally", ce_positional_weight, (logits, labels))
expect("nn.NLLLoss(weight=an input)", nll_input_weight, (logits, labels, torch.rand(5)))


def yolo_step(model, opt, x, t):
    bce = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.5]))
    loss = bce(model(x), t)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach()


torch.manual_seed(2)
train_as_eager("BCEWithLogitsLoss training step", yolo_step, lambda: nn.Linear(6, 5),
               lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True), (torch.randn(4, 6), target), 1, 0)

# --- numpy arrays made from constants -----------------------------------------


def stn_identity(x):
    iden = torch.from_numpy(np.array([1, 0, 0, 0, 1, 0, 0, 0, 1]).astype(np.float32)).view(1, 9).repeat(x.size(0), 1)
    return x + iden


def eye_and_ufunc(x):
    scale = torch.tensor(np.sqrt(np.arange(1, 4)), dtype=torch.float32)  # a ufunc on an array
    eye = torch.as_tensor(np.eye(3))  # float64, as torch gives a float64 array
    return (x * scale) @ eye.float(), eye.dtype


def int_array(x):
    idx = torch.from_numpy(np.array([2, 0, 1]))  # int64
    return x[:, idx], idx.dtype


x9, x3 = torch.randn(2, 9), torch.randn(2, 3)
expect("torch.from_numpy(np.array(...).astype(np.float32)) (PointNet)", stn_identity, (x9,))
expect("np.sqrt(np.arange(...)), torch.as_tensor(np.eye(3))", eye_and_ufunc, (x3,))
expect("torch.from_numpy of an int array", int_array, (x3,))

table = np.array([1.0, 2.0, 3.0], dtype=np.float32)


def from_input_array(x):
    return x * torch.from_numpy(table)  # an array read from a global: not folded


tracejit.reset()
compiled = tracejit.compile(from_input_array, backend=BACKEND)
check(same(compiled(x3), from_input_array(x3)), "torch.from_numpy of a global array: value as eager")
table[1] = 10.0  # the next call must see the new values
check(same(compiled(x3), from_input_array(x3)), "torch.from_numpy of a global array: sees its new values")


def returns_array(x):
    a = np.ones(3).astype(np.float32)
    return x + torch.from_numpy(a), a


tracejit.reset()
compiled = tracejit.compile(returns_array, backend=BACKEND)
first, second = compiled(x3), compiled(x3)
check(same(first[0], returns_array(x3)[0]) and isinstance(first[1], np.ndarray) and (first[1] == 1).all(),
      "a numpy array returned: value as eager")
check(first[1] is not second[1], "a numpy array returned: a new array per call, as eager")


def random_array(x):
    return x + torch.from_numpy(np.random.rand(3)).float()  # not folded: a draw per call


tracejit.reset()
compiled = tracejit.compile(random_array, backend=BACKEND)
check(not same(compiled(x3), compiled(x3)), "np.random in the frame: a new draw per call, as eager")

# --- torch.ops packets -----------------------------------------------------------
import torchvision  # noqa: E402  (registers torch.ops.torchvision)


def detect(boxes, scores, feat, rois):
    keep = torchvision.ops.nms(boxes, scores, 0.5)
    pooled = torchvision.ops.roi_align(feat, rois, output_size=(2, 2), spatial_scale=0.5, sampling_ratio=2)
    return keep, pooled.relu()


def aten_packet(x):
    return torch.ops.aten.relu(x) + torch.ops.aten.add(x, 1.0)


xy = torch.rand(6, 2) * 10
boxes = torch.cat([xy, xy + torch.rand(6, 2) * 5 + 1], 1)
scores, feat = torch.rand(6), torch.randn(2, 3, 8, 8)
rois = torch.tensor([[0, 0.0, 0.0, 6.0, 6.0], [1, 2.0, 1.0, 9.0, 7.0]])
expect("torchvision.ops.nms / roi_align (torch.ops.torchvision packets)", detect, (boxes, scores, feat, rois))
expect("torch.ops.aten.relu / add", aten_packet, (x3,))

# --- Tensor.item() never read ---------------------------------------------------


def ppo_step(model, opt, x, adv):
    ratio = model(x).squeeze(-1).exp()
    with torch.no_grad():
        clipfrac = ((ratio - 1.0).abs() > 0.2).float().mean().item()  # for logging the step does not do
    loss = -(adv * torch.clamp(ratio, 0.8, 1.2)).mean()
    loss.item()  # a bare call, as in a debugging leftover
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach()


def item_read(x):
    scale = x.sum().item()  # a branch on it below: breaks without capture_scalar_outputs
    return x * scale if scale > 0 else x


def item_many(x):
    unused = x.item()  # several elements: eager raises
    return x * 2


check(not tracejit.config.capture_scalar_outputs, "capture_scalar_outputs is off by default")
torch.manual_seed(3)
train_as_eager("PPO step with a dead .item()", ppo_step, lambda: nn.Linear(6, 1), lambda p: torch.optim.Adam(p, lr=1e-2),
               (torch.randn(8, 6), torch.randn(8)), 1, 0)
ex = expect("x.sum().item() read afterwards", item_read, (x3,), graphs=2, breaks=1)
check("Tensor.item()" in ex.break_reasons[0].reason, "an .item() that is read: the break names Tensor.item()")
tracejit.reset()
try:
    tracejit.compile(item_many, backend=BACKEND)(x3)
    raised = None
except (RuntimeError, ValueError) as e:
    raised = type(e)
check(raised is not None, f"a dead .item() of several elements: raises as eager ({raised})")
finish()
