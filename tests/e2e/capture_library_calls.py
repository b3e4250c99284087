"""Issue 42: library code public model programs call, traced whole.
torch.nn.functional's max pools (F.max_pool1d/2d, F.adaptive_max_pool1d:
boolean_dispatch closures in torch/_jit_internal.py), torch.distributions
(Normal, Categorical: inlined like torch.nn, with their argument validation
off; with it on, the checks break the graph and values still match eager;
kl_divergence's memo keyed by class pairs still breaks), a plain class's
zero-argument `super().__init__()`, and a collections.Counter read through
a source (MultiStepLR's milestones: `in` and `[]`, by constants and by a
number that changes every step).
Issue 39: a break at a method load that CPython answers with a NULL slot
(`super().<slot wrapper>`, a module attribute) resumes with eager's result
(it raised UnboundLocalError '__tj_stack0')."""
import collections
import math

import torch
import torch.nn.functional as F

from capture_util import expect
from e2e_util import BACKEND, check, check_equal, finish
import tracejit


def max_pools(x):
    return F.max_pool1d(x, 3), F.max_pool2d(x.unsqueeze(0), 2), F.adaptive_max_pool1d(x, 2), F.max_pool1d(x, x.size(2))


def max_pool_indices(x):
    out, idx = F.max_pool1d(x, 2, return_indices=True)
    return out * 2, idx


def normal_stats(mu, sigma):
    d = torch.distributions.Normal(mu, sigma)
    return d.log_prob(mu + 0.5), d.entropy(), d.mean, d.stddev


def normal_rsample(mu, sigma):
    torch.manual_seed(7)
    d = torch.distributions.Normal(mu, sigma)
    return d.rsample(), d.rsample((2,))


def categorical(logits):
    d = torch.distributions.Categorical(logits=logits)
    return d.log_prob(torch.tensor([0, 2])), d.entropy()


class Plain:
    def __init__(self, x):
        self.x = x * 2
        super().__init__()


def plain_init(x):
    return Plain(x + 1).x


class Slotted:
    def __init__(self, x):
        self.x = x + 1
        super().__setattr__("y", self.x * 3)  # object's slot wrapper: the trace breaks at the method load


def slot_wrapper_break(x):
    s = Slotted(x)
    return s.x + s.y


def missing_module_attr(x):
    y = x * 2
    return math.not_there(y)


mu, sigma, logits = torch.randn(2, 3), torch.rand(2, 3) + 0.5, torch.randn(2, 4)
x = torch.randn(2, 4, 9)

expect("F.max_pool1d/2d/adaptive_max_pool1d", max_pools, (x,))
expect("F.max_pool1d(return_indices=True)", max_pool_indices, (x,))
torch.distributions.Distribution.set_default_validate_args(False)
expect("Normal without validation", normal_stats, (mu, sigma))
expect("Normal.rsample", normal_rsample, (mu, sigma))
torch.distributions.Distribution.set_default_validate_args(True)
# validation reads the instance's __dict__ (`name in self.__dict__`) and
# checks tensor data (`if not valid.all(): raise`): the check runs after the
# graph (capture_distributions has its failing cases), same values
expect("Normal with validation", normal_stats, (mu, sigma), graphs=1, breaks=0)
expect("super().__init__() of object", plain_init, (torch.ones(3),))
expect("a break at super().__setattr__", slot_wrapper_break, (torch.ones(3),), graphs=3, breaks=3)

tracejit.reset()
try:
    missing_module_attr(torch.ones(2))
except AttributeError as e:
    want = str(e)
try:
    tracejit.compile(missing_module_attr, backend=BACKEND)(torch.ones(2))
    got = "no exception"
except AttributeError as e:
    got = str(e)
check_equal(got, want, "a missing module attribute raises eager's AttributeError")


# MultiStepLR keeps its milestones in a collections.Counter: `last_epoch in
# self.milestones` and `self.milestones[last_epoch]` with last_epoch a number
# that changes every step (a graph input): the Counter's keys are guarded,
# the equality of the number with each key a guarded fact.
def multistep_training():
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.5)

    def step(x, y):
        loss = F.mse_loss(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        return loss.detach()
    return m, opt, step


tracejit.reset()
xs, ys = torch.randn(8, 4), torch.randn(8, 2)
(m_e, opt_e, step_e), (m_c, opt_c, step_c) = multistep_training(), multistep_training()
compiled_step = tracejit.compile(step_c, backend=BACKEND)
same_losses = True
for _ in range(7):
    a, b = step_e(xs, ys), compiled_step(xs, ys)
    same_losses &= torch.equal(a, b) if BACKEND in ("eager", "aot_eager") else torch.allclose(a, b, rtol=1e-6)
check(same_losses, "MultiStepLR: 7 steps' losses equal eager's")
check(all(torch.allclose(p, q, rtol=1e-6) for p, q in zip(m_e.parameters(), m_c.parameters())),
      "MultiStepLR: final parameters equal eager's")
check_equal(opt_c.param_groups[0]["lr"], opt_e.param_groups[0]["lr"], "MultiStepLR: the learning rate")
counters = tracejit.counters()
check_equal(counters["graph_breaks"], 0, "MultiStepLR: `in` and [] of its Counter of milestones do not break")
check(counters["graphs_compiled"] <= 4, f"MultiStepLR: at most 4 compiles over 7 steps ({counters['graphs_compiled']})")


class Vocab:
    def __init__(self):
        self.counts = collections.Counter({"a": 3, "b": 1})


vocab = Vocab()


def counter_lookup(x):
    return x * vocab.counts["a"] + ("b" in vocab.counts) + ("z" in vocab.counts)


expect("a Counter's keys and items read by constant keys", counter_lookup, (torch.ones(2),))
finish()
