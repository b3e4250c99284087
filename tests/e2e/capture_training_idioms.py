"""Issue 42: idioms of public training code that used to break the graph,
each compiled whole (one graph, no break) with eager's values:
- gradient checkpointing (`torch.utils.checkpoint.checkpoint(block, x)`,
  HF's and timm's `gradient_checkpointing`), reentrant (the default) and
  `use_reentrant=False` with keyword arguments: the block is inlined, its
  values and gradients are eager's; a reentrant checkpoint whose tensor
  arguments do not require grad (eager warns and its output does not
  require grad) breaks the graph with that reason and gives eager's result;
- `torch.cuda.amp.GradScaler(enabled=False)` (what an AMP script gets on a
  CPU-only torch, or with `--amp` off): `scaler.scale(loss).backward()`,
  `scaler.step(opt)`, `scaler.update()`;
- `model.state_dict()` read in the frame (timm's ModelEmaV2, YOLOv5's
  ModelEMA: an EMA of the weights over `state_dict().values()`), and a
  state_dict returned from a compiled function: an OrderedDict with
  eager's keys, values and `_metadata`.
Also: a block compiled on its own and called inside an eager non-reentrant
checkpoint (its saved-tensor hooks active while the block is captured)
gives eager's gradients."""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

import tracejit
from e2e_util import BACKEND, check, check_equal, finish, tensors_same


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x, scale=1.0):
        return x + scale * self.fc2(F.gelu(self.fc1(self.ln(x))))


class CkptNet(nn.Module):
    def __init__(self, reentrant=True, d=8):
        super().__init__()
        self.embed = nn.Linear(4, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(3)])
        self.head = nn.Linear(d, 1)
        self.reentrant = reentrant

    def forward(self, x):
        h = self.embed(x)
        for blk in self.blocks:
            if self.reentrant:
                h = torch.utils.checkpoint.checkpoint(blk, h)
            else:
                h = torch.utils.checkpoint.checkpoint(blk, h, use_reentrant=False, scale=0.5)
        return self.head(h).squeeze(-1)


def train_step(model, opt, x, y):
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach()


def make(cls, *args):
    torch.manual_seed(1)
    model = cls(*args)
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


x, y = torch.randn(5, 4), torch.randn(5)
for reentrant in (True, False):
    tracejit.reset()
    model_e, opt_e = make(CkptNet, reentrant)
    model_c, opt_c = make(CkptNet, reentrant)
    compiled = tracejit.compile(train_step, backend=BACKEND)
    for step in range(3):
        want = train_step(model_e, opt_e, x, y)
        got = compiled(model_c, opt_c, x, y)
        check(tensors_same(got, want), f"checkpoint (reentrant={reentrant}) step {step}: eager's loss")
    check(all(tensors_same(a, b) for a, b in zip(model_c.parameters(), model_e.parameters())),
          f"checkpoint (reentrant={reentrant}): eager's parameters after three steps")
    model_x, opt_x = make(CkptNet, reentrant)
    ex = tracejit.explain(train_step)(model_x, opt_x, x, y)
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0),
                f"gradient checkpointing (reentrant={reentrant}) in a training step: one graph, no break")


# Compiled blocks called by eager code inside a non-reentrant checkpoint:
# its saved-tensor hooks are active while the block's graph is captured.
# They must not reach the capture (they packed its proxies and reran the
# block inside it: wrong gradients, then kept in the graph cache).
def eager_checkpointed(blocks, x):
    h = x
    for blk in blocks:
        h = torch.utils.checkpoint.checkpoint(blk, h, use_reentrant=False)
    h.pow(2).sum().backward()


tracejit.reset()
graph_cache = tracejit.config.graph_cache
tracejit.config.graph_cache = False  # a capture in this process, not an entry on disk
torch.manual_seed(6)
blocks_e = nn.ModuleList([Block(8) for _ in range(2)])
blocks_c = nn.ModuleList([Block(8) for _ in range(2)])
blocks_c.load_state_dict(blocks_e.state_dict())
xh = torch.randn(5, 8, requires_grad=True)
eager_checkpointed(blocks_e, xh)
grad_e = xh.grad.clone()
xh.grad = None
eager_checkpointed([tracejit.compile(b, backend=BACKEND) for b in blocks_c], xh)
check(tensors_same(xh.grad, grad_e), "compiled blocks inside an eager non-reentrant checkpoint: eager's input gradient")
check(all(tensors_same(a.grad, b.grad) for a, b in zip(blocks_c.parameters(), blocks_e.parameters())),
      "compiled blocks inside an eager non-reentrant checkpoint: eager's parameter gradients")
# The same compiled block, already compiled, called under saved_tensors_hooks.
for b in blocks_e.parameters():
    b.grad = None
for b in blocks_c.parameters():
    b.grad = None
xh.grad = None
compiled_block = tracejit.compile(blocks_c[0], backend=BACKEND)
compiled_block(xh)


def hooked(block):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        h = block(xh)
    h.pow(2).sum().backward()


hooked(blocks_e[0])
grad_e = xh.grad.clone()
xh.grad = None
runs_before = tracejit.counters()["aot_runs_op_by_op"]
hooked(compiled_block)
if BACKEND in ("aot_eager", "llvm"):  # AOT backends: the call is counted, not silent
    check(tracejit.counters()["aot_runs_op_by_op"] > runs_before,
          "a compiled block under saved_tensors_hooks is counted in aot_runs_op_by_op")
check(tensors_same(xh.grad, grad_e), "a compiled block under saved_tensors_hooks: eager's input gradient")
check(all(tensors_same(a.grad, b.grad) for a, b in zip(blocks_c[0].parameters(), blocks_e[0].parameters())),
      "a compiled block under saved_tensors_hooks: eager's parameter gradients")
tracejit.config.graph_cache = graph_cache


# A reentrant checkpoint of a tensor that does not require grad: eager warns
# and its output does not require grad (the block's parameters get none).
def no_grad_input(block, x):
    return torch.utils.checkpoint.checkpoint(block, x) * 2


tracejit.reset()
torch.manual_seed(2)
block = Block(4)
xs = torch.randn(3, 4)
with warnings.catch_warnings(record=True) as eager_warnings:
    warnings.simplefilter("always")
    want = no_grad_input(block, xs)
with warnings.catch_warnings(record=True) as compiled_warnings:
    warnings.simplefilter("always")
    got = tracejit.compile(no_grad_input, backend=BACKEND)(block, xs)
check(tensors_same(got, want), "a reentrant checkpoint of an input without grad: eager's values")
check_equal(got.requires_grad, want.requires_grad, "a reentrant checkpoint of an input without grad: eager's requires_grad")
check_equal([str(w.message) for w in compiled_warnings], [str(w.message) for w in eager_warnings],
            "a reentrant checkpoint of an input without grad: eager's warning")
ex = tracejit.explain(no_grad_input)(block, xs)
check(any("no tensor argument that requires grad" in r.reason for r in ex.break_reasons),
      f"a reentrant checkpoint of an input without grad breaks with the reason: {[r.reason for r in ex.break_reasons]}")


# preserve_rng_state=False with dropout: eager's backward recomputes with
# other random numbers (its gradients are of another mask): a break.
def no_rng_restore(block, x):
    out = torch.utils.checkpoint.checkpoint(block, x, preserve_rng_state=False)
    out.sum().backward()
    return out.detach()


torch.manual_seed(7)
drop_block = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
xd = torch.randn(6, 4, requires_grad=True)
tracejit.reset()
torch.manual_seed(8)
want = no_rng_restore(drop_block, xd)
want_grads = [p.grad.clone() for p in drop_block.parameters()]
drop_block.zero_grad()
torch.manual_seed(8)
got = tracejit.compile(no_rng_restore, backend=BACKEND)(drop_block, xd)
check(tensors_same(got, want), "checkpoint(preserve_rng_state=False) with dropout: eager's output")
check(all(tensors_same(p.grad, g) for p, g in zip(drop_block.parameters(), want_grads)),
      "checkpoint(preserve_rng_state=False) with dropout: eager's gradients")
torch.manual_seed(8)
ex = tracejit.explain(no_rng_restore)(drop_block, xd)
check(any("preserve_rng_state=False" in r.reason for r in ex.break_reasons),
      f"checkpoint(preserve_rng_state=False) breaks with the reason: {[r.reason for r in ex.break_reasons]}")


# An AMP-style loop on a CPU-only torch: GradScaler and autocast disabled.
class Counted(nn.Module):
    """A LayerNorm with a persistent buffer (in state_dict) and a
    non-persistent one (left out of it)."""

    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.register_buffer("seen", torch.zeros(()))
        self.register_buffer("gain", torch.full((d,), 1.5), persistent=False)

    def forward(self, x):
        if self.training:
            self.seen += x.shape[0]
        return self.norm(x) * self.gain


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 12), Counted(12), nn.ReLU())
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        return self.fc(self.body(x))


class ModelEma:
    """timm's ModelEmaV2: the EMA over state_dict().values() (buffers too)."""

    def __init__(self, model, decay=0.9):
        torch.manual_seed(5)
        self.module = Classifier()
        self.module.load_state_dict(model.state_dict())
        self.module.eval()
        self.decay = decay

    def update(self, model):
        with torch.no_grad():
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                ema_v.copy_(self.decay * ema_v + (1.0 - self.decay) * model_v)


def amp_step(model, opt, scaler, ema, x, y):
    with torch.autocast("cpu", enabled=False):
        loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    ema.update(model)
    return loss.detach()


def make_amp():
    torch.manual_seed(3)
    model = Classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CPU-only torch: "CUDA is not available. Disabling."
        scaler = torch.cuda.amp.GradScaler(enabled=False)
    return model, opt, scaler, ModelEma(model)


xa, ya = torch.randn(6, 6), torch.tensor([0, 1, 2, 0, 1, 2])
tracejit.reset()
state_e, state_c = make_amp(), make_amp()
compiled = tracejit.compile(amp_step, backend=BACKEND)
for step in range(3):
    want = amp_step(*state_e, xa, ya)
    got = compiled(*state_c, xa, ya)
    check(tensors_same(got, want), f"GradScaler/autocast disabled + state_dict EMA, step {step}: eager's loss")
ema_e, ema_c = state_e[3].module.state_dict(), state_c[3].module.state_dict()
check_equal(list(ema_c.keys()), list(ema_e.keys()), "state_dict EMA: the same entries")
check(all(tensors_same(ema_c[k], ema_e[k]) for k in ema_e), "state_dict EMA: eager's averaged weights and buffers")
check(all(tensors_same(a, b) for a, b in zip(state_c[0].parameters(), state_e[0].parameters())),
      "GradScaler(enabled=False) steps: eager's parameters")
ex = tracejit.explain(amp_step)(*make_amp(), xa, ya)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0),
            "GradScaler(enabled=False), autocast(enabled=False) and a state_dict EMA: one graph, no break")


# A state_dict leaving the compiled function: eager's OrderedDict, _metadata included.
def snapshot(model, x):
    out = model(x)
    return out, model.state_dict()


tracejit.reset()
model = make_amp()[0].eval()
want_out, want_sd = snapshot(model, xa)
got_out, got_sd = tracejit.compile(snapshot, backend=BACKEND)(model, xa)
check(tensors_same(got_out, want_out), "state_dict returned: eager's output")
check_equal(type(got_sd).__name__, type(want_sd).__name__, "state_dict returned: an OrderedDict")
check_equal(list(got_sd.keys()), list(want_sd.keys()), "state_dict returned: eager's keys")
check(all(tensors_same(got_sd[k], want_sd[k]) for k in want_sd), "state_dict returned: eager's values")
check_equal(dict(got_sd._metadata), dict(want_sd._metadata), "state_dict returned: eager's _metadata (module versions)")
check(all(not v.requires_grad for v in got_sd.values()), "state_dict returned: detached tensors, as eager's")
ex = tracejit.explain(snapshot)(model, xa)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "a state_dict returned: one graph, no break")

finish()
