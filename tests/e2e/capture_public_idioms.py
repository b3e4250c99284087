"""Issue 42: idioms of public model code that used to break the graph, each
compiled whole (one graph, no break) with eager's values:
- enum-valued configs compared with `==` / `!=` (`if self.act == Act.GELU`,
  a `str`-mixin enum), decided at trace time with the member guarded, so
  assigning another member recompiles;
- `logger.debug(f"...")` / `logger.isEnabledFor(...)` in a forward on a
  logger that is off for the level: the call does nothing, as eager's early
  return, guarded on the logger staying off: turning the level on (setLevel)
  recompiles and the records are emitted as eager's;
- `torch.distributions.kl_divergence` (without argument validation): its
  memo keyed by the pair of classes `(type(p), type(q))` is a dict lookup
  with a constant key, not a break;
- torch.distributions' `lazy_property` (Categorical's `probs`, read by
  `entropy()`) on a distribution made in the frame, without argument
  validation: computed and set on the instance as its `__get__` does;
- a warmup schedule `LambdaLR(opt, lambda step: min(1.0, (step + 1) / 3))`:
  `min`/`max` of the scheduler's step (a dynamic number after it changed)
  and a constant is the comparison CPython makes, guarded as a fact;
- a seq2seq decoder writing each step into a fresh tensor
  (`outputs = torch.zeros(...)`, `outputs[:, t] = out`) in a training step:
  the gradients eager gives (AOT runs such a graph op by op: LibTorch 1.13's
  CopySlices would misplace the gradient of a write that makes a view of a
  fresh tensor require grad)."""
import enum
import itertools
import logging

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_equal, finish, tensors_same

logger = logging.getLogger("capture_public_idioms")
logger.setLevel(logging.WARNING)


class Act(enum.Enum):
    RELU = "relu"
    GELU = "gelu"


class Norm(str, enum.Enum):
    LN = "ln"
    NONE = "none"


class Block(nn.Module):
    def __init__(self, act, norm=Norm.LN):
        super().__init__()
        self.act, self.norm_kind = act, norm
        self.fc = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8) if norm == Norm.LN else nn.Identity()

    def forward(self, x):
        logger.debug(f"Block input {tuple(x.shape)} act={self.act.value}")
        h = self.fc(self.norm(x))
        if self.act == Act.GELU:
            h = F.gelu(h)
        elif self.act != Act.RELU:
            raise ValueError(f"unknown {self.act}")
        else:
            h = F.relu(h)
        if self.norm_kind == "ln" and logger.isEnabledFor(logging.INFO):
            logger.info("normed %d", h.shape[-1])
        return x + h


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(Act.RELU), Block(Act.GELU, Norm.NONE))

    def forward(self, x):
        return self.blocks(x)


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.seen = []

    def emit(self, record):
        self.seen.append(record.getMessage())


records = Records()
logger.addHandler(records)

torch.manual_seed(0)
net = Net()
x = torch.randn(3, 8)
want = net(x)
compiled = tracejit.compile(net, backend=BACKEND)
got = compiled(x)
check(tensors_same(got, want), "enum configs and a silent logger: values equal eager's")
check_equal(records.seen, [], "a logger off for the level emits nothing")
ex = tracejit.explain(compiled)(x)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "enum compares and silent logging: one graph, no break")

# another member: the guard on the member recompiles, with eager's branch
net.blocks[0].act = Act.GELU
want = net(x)
check(tensors_same(compiled(x), want), "an enum member assigned after compiling takes its branch")

# the logger turned on: the guard on its level cache fails and the calls log
logger.setLevel(logging.DEBUG)
records.seen.clear()
want = net(x)
want_records = list(records.seen)
records.seen.clear()
got = compiled(x)
check(tensors_same(got, want), "with the logger on: values equal eager's")
check_equal(records.seen, want_records, "with the logger on: the records eager emits")
check(len(want_records) == 3, "eager emits three records with DEBUG on")

# off again, through logging.disable
logging.disable(logging.CRITICAL)
records.seen.clear()
check(tensors_same(compiled(x), net(x)), "logging.disable: values equal eager's")
check_equal(records.seen, [], "logging.disable: nothing emitted")
logging.disable(logging.NOTSET)


def vae_kl(mu, logvar, x):
    q = torch.distributions.Normal(mu, torch.exp(0.5 * logvar), validate_args=False)
    prior = torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(mu), validate_args=False)
    kl = torch.distributions.kl_divergence(q, prior).sum(-1)
    return q.log_prob(x).sum(-1) - kl


tracejit.reset()
mu, logvar = torch.randn(4, 2), torch.randn(4, 2)
want = vae_kl(mu, logvar, mu)  # eager fills kl's memo for (Normal, Normal)
compiled = tracejit.compile(vae_kl, backend=BACKEND)
check(tensors_same(compiled(mu, logvar, mu), want), "kl_divergence of two Normals: values equal eager's")
ex = tracejit.explain(vae_kl)(mu, logvar, mu)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "kl_divergence's memo lookup: one graph, no break")


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.Tanh())
        self.pi = nn.Linear(16, 4)
        self.v = nn.Linear(16, 1)

    def forward(self, obs):
        h = self.body(obs)
        return torch.distributions.Categorical(logits=self.pi(h), validate_args=False), self.v(h).squeeze(-1)


def ppo_step(policy, opt, obs, actions, old_logp, adv, ret):
    dist, value = policy(obs)
    logp = dist.log_prob(actions)
    ratio = torch.exp(logp - old_logp)
    clipped = torch.clamp(ratio, 0.8, 1.2) * adv
    loss = -torch.min(ratio * adv, clipped).mean() + 0.5 * F.mse_loss(value, ret) - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach(), dist.probs.detach()


def make_ppo():
    torch.manual_seed(3)
    policy = Policy()
    return policy, torch.optim.Adam(policy.parameters(), lr=1e-2)


obs, actions = torch.randn(5, 6), torch.tensor([0, 3, 1, 1, 2])
old_logp, adv, ret = torch.randn(5) - 1.5, torch.randn(5), torch.randn(5)
tracejit.reset()
policy_e, opt_e = make_ppo()
policy_c, opt_c = make_ppo()
compiled = tracejit.compile(ppo_step, backend=BACKEND)
for step in range(3):
    want = ppo_step(policy_e, opt_e, obs, actions, old_logp, adv, ret)
    got = compiled(policy_c, opt_c, obs, actions, old_logp, adv, ret)
    check(all(tensors_same(g, w) for g, w in zip(got, want)), f"PPO step {step} with Categorical's lazy probs: eager's loss and probs")
check(all(tensors_same(a, b) for a, b in zip(policy_c.parameters(), policy_e.parameters())),
      "PPO steps with Categorical's lazy probs: eager's parameters")
policy_x, opt_x = make_ppo()
ex = tracejit.explain(ppo_step)(policy_x, opt_x, obs, actions, old_logp, adv, ret)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "Categorical's lazy_property in a PPO step: one graph, no break")


def warmup_step(model, opt, sched, x, y):
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    return loss.detach()


def make_warmup():
    torch.manual_seed(4)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: max(0.0, min(1.0, (step + 1) / 3)))
    return model, opt, sched


x, y = torch.randn(6, 4), torch.randn(6, 1)
tracejit.reset()
state_e, state_c = make_warmup(), make_warmup()
compiled = tracejit.compile(warmup_step, backend=BACKEND)
for step in range(5):
    want = warmup_step(*state_e, x, y)
    check(tensors_same(compiled(*state_c, x, y), want), f"warmup LambdaLR step {step}: eager's loss")
check_equal(state_c[1].param_groups[0]["lr"], state_e[1].param_groups[0]["lr"], "warmup LambdaLR: eager's lr")
check(all(tensors_same(a, b) for a, b in zip(state_c[0].parameters(), state_e[0].parameters())),
      "warmup LambdaLR: eager's parameters")
check_equal(tracejit.counters()["graph_breaks"], 0, "min/max of the scheduler's step in the lambda: no break")


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(4, 6)
        self.out = nn.Linear(6, 4)

    def forward(self, h, steps):
        outputs = torch.zeros(h.shape[0], steps, 4)
        inp = torch.zeros(h.shape[0], 4)
        for t in range(1, steps):
            h = self.cell(inp, h)
            out = self.out(h)
            outputs[:, t] = out
            inp = out.tanh()
        return outputs


def decoder_step(dec, h, target):
    outputs = dec(h, target.shape[1])
    loss = F.mse_loss(outputs[:, 1:], target[:, 1:])
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in dec.parameters()]


torch.manual_seed(1)
dec = Decoder()
h0 = torch.randn(3, 6)
for target, how in itertools.product((torch.randn(3, 2, 4), torch.randn(3, 5, 4)),
                                     ("a compiled module, backward after it", "a compiled training step")):
    how = f"{target.shape[1] - 1} steps, {how}"
    tracejit.reset()
    dec.zero_grad(set_to_none=True)
    want_loss, want_grads = decoder_step(dec, h0, target)
    dec.zero_grad(set_to_none=True)
    if how.startswith("a compiled module"):
        got_loss, got_grads = decoder_step(tracejit.compile(dec, backend=BACKEND), h0, target)
    else:
        got_loss, got_grads = tracejit.compile(decoder_step, backend=BACKEND)(dec, h0, target)
    check(tensors_same(got_loss, want_loss), f"decoder writing outputs[:, t], {how}: the loss eager gives")
    check(all(tensors_same(g, w) for g, w in zip(got_grads, want_grads)),
          f"decoder writing outputs[:, t], {how}: eager's gradients")
finish()
