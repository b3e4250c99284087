"""Issue 42: the idioms of public training loops around a compiled step
(session 22's probes p28-p30):
- a list input the step only appends to (`losses.append(loss.detach())` on a
  global, `self.history.append(...)` on a module attribute, an argument):
  its contents are not read, so they are not guarded; the values appended
  are added to the list after the graph. Before, the list's length was
  guarded: every call failed the guard, recompiled, and after 8 calls the
  step ran uncompiled (cache_size_limit);
- `losses.append(loss.item())`: one graph, no break (the number leaves the
  graph and is appended after it: issue 42, session 24; before, a break at
  `item()` resumed in a frame that appended), with no recompile across calls;
- `total += loss.item()` in a loop over batches: the float a resume
  function receives on its stack (the `item()` the break ran in CPython,
  the running total) is a graph input from its first trace, not a
  constant compiled once more after the first change;
- a list appended to and then read in the same frame (`len(losses)`,
  `losses[-1]`) is guarded as before, with the values appended;
- `random.random()` / `random.randint` / `random.sample` / `np.random.rand`
  break the graph with a reason naming the random stream, and the numbers
  drawn are eager's (same seed, same sequence);
- a Module subclass that defines its own `__call__` (pix2pix/CycleGAN's
  GANLoss has no forward; a wrapper that scales its input and calls
  `super().__call__`): eager's `__call__` is traced, not `forward` (the
  first broke at Module's `_forward_unimplemented`, the second skipped the
  wrapper's own work: a wrong value).
- `torch.from_numpy` of a numpy array passed in: one clean break with that
  reason, no recompile per call;
- a dict of lists a step appends to (`log["losses"].append(loss.item())`,
  session 26): its lists are logs as a list argument's are, so the step is
  one graph compiled once (before: each list's length guarded, one
  recompile per call); a dict read otherwise in the frame has its lists
  wrapped and guarded as before, with eager's values;
- `len(memory)` of a deque (DQN's replay memory, session 26): an int read
  from the input, guarded by value and then an automatic dynamic int, so
  `if len(memory) < BATCH_SIZE` is no break and the growing memory costs
  at most two recompiles (before: a break, "builtin len() with these
  arguments is not supported")."""
import collections
import random

import numpy as np
import torch
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, EXACT, check, check_equal, finish, tensors_same

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
batches = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(12)]
losses = []


def clone_setup():
    # One eager step first: the compiled step's first call then finds the
    # `.grad`s and the optimizer's state made, as its later calls do (torch
    # 1.13's zero_grad keeps the grads), so no recompile counted below is
    # the one a step's second call makes for them.
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    m.load_state_dict(model.state_dict())
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    F.cross_entropy(m(batches[0][0]), batches[0][1]).backward()
    opt.step()
    return m, opt


def close(a, b):
    return all((torch.equal(x, y) if EXACT else torch.allclose(x, y, atol=1e-5)) if isinstance(x, torch.Tensor)
               else abs(x - y) <= (0 if EXACT else 1e-5) for x, y in zip(a, b)) and len(a) == len(b)


# ---------------------------------------------------------------- append only
class Trainer:
    def __init__(self):
        self.model, self.opt = clone_setup()
        self.history = []

    def step(self, x, y, seen):
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        losses.append(loss.detach())
        self.history.append(loss.detach() * 2)
        seen.append(y.sum())
        return loss.detach()


def run_appends(compiled):
    tracejit.reset()
    losses.clear()
    tr = Trainer()
    fn = tracejit.compile(tr.step, backend=BACKEND) if compiled else tr.step
    seen = []
    outs = [fn(x, y, seen) for x, y in batches]
    return outs, list(losses), list(tr.history), seen, tracejit.counters()


want = run_appends(False)
got = run_appends(True)
check(close(got[0], want[0]), "append only: the step's losses match eager")
check(close(got[1], want[1]) and close(got[2], want[2]) and close(got[3], want[3]),
      "append only: a global, an attribute and an argument list hold eager's values, in order")
check_equal((got[4]["recompiles"], got[4]["graphs_compiled"]), (0, 1),
            "append only: 12 calls, one compile (no length guard on the lists)")
losses.clear()
ex = tracejit.explain(Trainer().step)(batches[0][0], batches[0][1], [])
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "append only: one graph, no break")


# ---------------------------------------------------------- append of .item()
def item_step(x, y, m, opt):
    opt.zero_grad()
    out = m(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
    return out.detach()


def run_items(compiled):
    tracejit.reset()
    losses.clear()
    m, opt = clone_setup()
    fn = tracejit.compile(item_step, backend=BACKEND) if compiled else item_step
    outs = [fn(x, y, m, opt) for x, y in batches[:6]]
    return outs, list(losses), tracejit.counters()


want = run_items(False)
got = run_items(True)
check(close(got[0], want[0]) and close(got[1], want[1]), "losses.append(loss.item()): values match eager")
check_equal(got[2]["recompiles"], 0, "losses.append(loss.item()): no recompile over 6 calls")
m, opt = clone_setup()
ex = tracejit.explain(item_step)(batches[0][0], batches[0][1], m, opt)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "losses.append(loss.item()): the step is one graph, no break")


# ------------------------------------------------------ total += loss.item()
def epoch(data, m, opt):
    total = 0.0
    for x, y in data:
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        total += loss.item()
    return total / len(data)


def run_epochs(compiled):
    tracejit.reset()
    m, opt = clone_setup()
    fn = tracejit.compile(epoch, backend=BACKEND) if compiled else epoch
    outs = [fn(batches[i:i + 3], m, opt) for i in (0, 3, 6)]
    return outs, tracejit.counters()


want = run_epochs(False)
got = run_epochs(True)
check(close(got[0], want[0]), "total += loss.item(): the epoch means match eager")
check_equal(got[1]["recompiles"], 0, "total += loss.item(): the resumed frames compile once (the floats are inputs)")


# ------------------------------------------------ appended, then read again
def append_then_read(x, log):
    log.append(x * 2)
    log.append(x + 1)
    n = len(log)
    return log[-1] * n, log[0]


for start in ([], [torch.ones(3)]):
    tracejit.reset()
    a, b = list(start), list(start)
    w = append_then_read(torch.arange(3.0), a)
    g = tracejit.compile(append_then_read, backend=BACKEND)(torch.arange(3.0), b)
    check(tensors_same(list(g), list(w)) and tensors_same(b, a),
          f"append, then len() and an index on a list of {len(start)}: eager's values and list")
    g2 = tracejit.compile(append_then_read, backend=BACKEND)(torch.arange(3.0), b)
    w2 = append_then_read(torch.arange(3.0), a)
    check(tensors_same(list(g2), list(w2)) and tensors_same(b, a), "  the second call (the list has grown): eager's values")


# ----------------------------------------------------------------- random
def teacher_forcing(x, ratio):
    h = torch.tanh(x)
    if random.random() < ratio:
        h = h * 2
    return h + random.randint(0, 5) + float(np.random.rand())


def sample_batch(memory, n):
    picked = random.sample(memory, n)
    return torch.stack(picked).sum(0)


for fn, args, needle in ((teacher_forcing, (torch.ones(3), 0.5), "Python's random stream"),
                         (sample_batch, ([torch.full((2,), float(i)) for i in range(6)], 3), "random.sample()")):
    tracejit.reset()
    random.seed(3), np.random.seed(3)
    want = [fn(*args) for _ in range(6)]
    random.seed(3), np.random.seed(3)
    c = tracejit.compile(fn, backend=BACKEND)
    got = [c(*args) for _ in range(6)]
    check(tensors_same(got, want), f"{fn.__name__}: the numbers drawn are eager's, in eager's order")
    ex = tracejit.explain(fn)(*args)
    reasons = [r.reason for r in ex.break_reasons]
    check(bool(reasons) and all("random stream" in r for r in reasons) and any(needle in r for r in reasons),
          f"{fn.__name__}: the breaks name the random stream ({reasons[:1]})")
ex = tracejit.explain(teacher_forcing)(torch.ones(3), 0.5)
check(any(r.reason.startswith("numpy.random.rand()") for r in ex.break_reasons), "np.random.rand(): named as numpy's stream")



# ----------------------------------------------------- a Module's own __call__
class GANLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("real_label", torch.tensor(1.0))
        self.register_buffer("fake_label", torch.tensor(0.0))
        self.loss = torch.nn.MSELoss()

    def __call__(self, prediction, target_is_real):
        target = (self.real_label if target_is_real else self.fake_label).expand_as(prediction)
        return self.loss(prediction, target)


class Scaled(torch.nn.Linear):
    def __call__(self, x):
        return super().__call__(x * 3) + 1


gan_loss, scaled = GANLoss(), Scaled(3, 2)


def own_calls(x):
    return gan_loss(x, True) + gan_loss(x * 2, False), scaled(x)


tracejit.reset()
xa = torch.randn(4, 3)
want = own_calls(xa)
got = tracejit.compile(own_calls, backend=BACKEND)(xa)
check(tensors_same(list(got), list(want), atol=1e-5), "a Module's own __call__: eager's values (the wrapper's work kept)")
ex = tracejit.explain(own_calls)(xa)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "a Module's own __call__: one graph, no break")


# --------------------------------------------- torch.from_numpy of an input
lin = torch.nn.Linear(3, 2)


def from_input_array(state):
    return torch.softmax(lin(torch.from_numpy(state).float().unsqueeze(0)), -1)


tracejit.reset()
c = tracejit.compile(from_input_array, backend=BACKEND)
arrays = [np.random.rand(3) for _ in range(5)]
check(tensors_same([c(a) for a in arrays], [from_input_array(a) for a in arrays], atol=1e-6),
      "torch.from_numpy of an input array: eager's values for 5 arrays")
check_equal(tracejit.counters()["recompiles"], 0, "torch.from_numpy of an input array: no recompile per call")
ex = tracejit.explain(from_input_array)(arrays[0])
check(ex.graph_count == 1 and ex.graph_break_count == 1 and "numpy array read from an input" in ex.break_reasons[0].reason,
      f"torch.from_numpy of an input array: one graph after one break naming it ({[r.reason for r in ex.break_reasons]})")


# ------------------------------------------------- a dict of lists appended to
def logged_step(x, y, m, opt, log):
    opt.zero_grad()
    out = m(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    opt.step()
    log["losses"].append(loss.item())
    log["outs"].append(out.detach().sum())
    return loss.detach()


def run_dict_log(compiled):
    tracejit.reset()
    m, opt = clone_setup()
    log = {"losses": [], "outs": [], "epoch": 3}
    fn = tracejit.compile(logged_step, backend=BACKEND) if compiled else logged_step
    outs = [fn(x, y, m, opt, log) for x, y in batches[:6]]
    return outs, log["losses"], log["outs"], tracejit.counters()


want = run_dict_log(False)
got = run_dict_log(True)
check(close(got[0], want[0]) and close(got[1], want[1]) and close(got[2], want[2]),
      "log[k].append(...): the step's losses and the dict's lists hold eager's values, in order")
check_equal((got[3]["recompiles"], got[3]["graphs_compiled"]), (0, 1),
            "log[k].append(...): 6 calls, one compile (no length guard on the dict's lists)")
m, opt = clone_setup()
ex = tracejit.explain(logged_step)(batches[0][0], batches[0][1], m, opt, {"losses": [], "outs": [], "epoch": 3})
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "log[k].append(...): one graph, no break")


def log_then_read(x, log, xs):
    log["xs"].append(x * 2)
    log["n"].append(len(xs))
    xs.append(x + 1)  # the same list as log["xs"]
    return x * len(log["xs"]) + log["xs"][0], log["n"][-1]


for calls in (1, 3):
    tracejit.reset()
    a, b = {"xs": [], "n": [5]}, {"xs": [], "n": [5]}
    c = tracejit.compile(log_then_read, backend=BACKEND)
    w = [log_then_read(torch.arange(3.0) + i, a, a["xs"]) for i in range(calls)]
    g = [c(torch.arange(3.0) + i, b, b["xs"]) for i in range(calls)]
    check(all(torch.equal(gi[0], wi[0]) and gi[1] == wi[1] for gi, wi in zip(g, w)) and tensors_same(b["xs"], a["xs"]) and
          b["n"] == a["n"], f"a dict's list appended to, then read and aliased ({calls} calls): eager's values and lists")


# ------------------------------------------------------- len() of a deque
class ReplayMemory:
    def __init__(self):
        self.memory = collections.deque([], maxlen=10)

    def __len__(self):
        return len(self.memory)


def optimize_model(x, memory, batch_size=4):
    if len(memory) < batch_size:
        return x * 0
    return x * len(memory) + len(memory.memory)


tracejit.reset()
mem_e, mem_c = ReplayMemory(), ReplayMemory()
c = tracejit.compile(optimize_model, backend=BACKEND)
want, got = [], []
for i in range(14):
    want.append(optimize_model(torch.arange(3.0), mem_e))
    got.append(c(torch.arange(3.0), mem_c))
    mem_e.memory.append(i), mem_c.memory.append(i)
check(tensors_same(got, want), "len(deque): eager's values over 14 calls (the memory growing to its maxlen)")
check(tracejit.counters()["recompiles"] <= 2,
      f"len(deque): at most two recompiles over 14 calls (an automatic dynamic int, {tracejit.counters()['recompiles']})")
ex = tracejit.explain(optimize_model)(torch.arange(3.0), mem_c)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0),
            f"len(deque): one graph, no break ({[r.reason for r in ex.break_reasons][:1]})")

finish()
