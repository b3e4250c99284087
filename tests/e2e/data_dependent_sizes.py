"""Issue 43: data-dependent sizes without a graph break, compiled.
nonzero, boolean-mask indexing, masked_select, unique (sorted, with
inverse and counts), repeat_interleave with a tensor and torch.where(cond)
stay in one graph with ops before and after them (the graph carries a
size known only when it runs). Over 6 sizes and masks (empty results and
all-true masks among them) the values equal eager's and the function
compiles at most twice. A fact Python code tests on such a size
(`if idx.numel() == 0`) breaks the graph cleanly (never a wrong branch).
Training through a masked loss gives eager's gradients, a transformer LM
with a padding mask built from lengths too, and
config.capture_dynamic_output_shape_ops = False gives back the break.
On a compiling backend nothing runs op by op (backend_fallbacks 0): the ops
before and after the data-dependent op compile per size until three sizes
of 2 or more make an AOT size template, then with no capture (over 40
counts AOT stops capturing; counts 0 and 1 compile on their own; past 64
sizes without a template a part runs op by op, counted). .item() and
.tolist() ints feed factories' sizes and slices without a break.
Slices and narrow bounded by a 0-d tensor stay in the graph; a list sliced
by one breaks with a reason; facts every size satisfies need no break; the
frame resumed after a break compiles once over 6 counts."""
import contextlib
import io
import os
import subprocess

import torch
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

torch.manual_seed(0)
SIZES = (3, 5, 6, 7, 9, 12)
if BACKEND == "nvrtc":  # registered only where it is built: a run on another backend would prove nothing
    check("nvrtc" in tracejit._C.known_backends(), "the nvrtc backend is built and registered")
EXACT = BACKEND in ("eager", "aot_eager")


def counters():
    return tracejit.counters()


def same(a, b):
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        if not (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape):
            return False
        if EXACT or not a.is_floating_point():
            return torch.equal(a, b)
        return torch.allclose(a, b, rtol=1e-5, atol=1e-6)
    return type(a) is type(b) and a == b


def nonzero_between(x):
    idx = torch.nonzero(x * 2 > 0.5)
    return idx * 3 + 1, idx.sum(0), x.relu().sum()


def mask_index(x):
    y = (x + 1)[x > 0]
    return y.exp() * 2, y.sum(), x * 2


def mask_rows(x):
    keep = x.sum(1) > 0
    return (x * 2)[keep].mean(1) + 1


def masked_select_between(x):
    return torch.masked_select(x * 3, x > 0.2).sin() - 1


def unique_all(x):
    v, inverse, counts = torch.unique((x * 2).round(), sorted=True, return_inverse=True, return_counts=True)
    return v * 2, inverse + 1, counts.float() / 2


def unique_plain(x):
    return torch.unique((x * 2).round().abs()).neg()


def unique_consecutive_counts(x):
    v, counts = torch.unique_consecutive((x > 0).long().flatten(), return_counts=True)
    return v + 1, counts * 2


def repeat_by_tensor(x):
    reps = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    return torch.repeat_interleave(x * 2, reps, dim=0) + 1, torch.repeat_interleave(reps) * 3


def where_cond(x):
    rows, cols = torch.where(x > 0)
    return x[rows, cols] * 2 + 1, rows + cols


def nonzero_tuple(x):
    rows, cols = torch.nonzero(x > 0, as_tuple=True)
    return (rows * 10 + cols).float() + x.sum()


def mask_then_slice(x):
    y = x[x > 0]
    return y[:3] * 2, y[1:].sum()


PATTERNS = (nonzero_between, mask_index, mask_rows, masked_select_between, unique_all, unique_plain,
            unique_consecutive_counts, repeat_by_tensor, where_cond, nonzero_tuple, mask_then_slice)


def inputs():
    # random, all negative (empty results), all positive (all-true masks)
    out = [torch.randn(n, 4) for n in SIZES]
    out.append(-torch.rand(4, 4) - 1)
    out.append(torch.rand(5, 4) + 1)
    return out


for fn in PATTERNS:
    tracejit.reset()
    cf = tracejit.compile(fn, backend=BACKEND)
    ok = True
    for x in inputs():
        want = fn(x)
        got = cf(x)
        if not same(got, want):
            ok = False
            print(f"  {fn.__name__} differs for {tuple(x.shape)}: {got} vs {want}")
    check(ok, f"{fn.__name__}: {len(inputs())} inputs (empty and all-true among them) equal eager")
    check_equal(counters()["graph_breaks"], 0, f"{fn.__name__}: no graph break")
    check(counters()["graphs_compiled"] <= 2,
          f"{fn.__name__}: compiled at most twice over {len(inputs())} inputs ({counters()['graphs_compiled']})")
    # a compiling backend compiles such a graph in stages (the ops after the
    # data-dependent op once its size is known): nothing runs op by op
    check_equal(counters()["backend_fallbacks"], 0, f"{fn.__name__}: compiled on {BACKEND}, not run op by op")
    if BACKEND == "aot_eager":
        check(counters()["aot_captures"] >= 2, f"{fn.__name__}: AOT captured the ops before and after")


# A slice bounded by a 0-d tensor (x[:lengths[0]]), or by .item() under
# capture_scalar_outputs: the bound is read when the graph runs.
def slice_by_tensor(x, lengths):
    y = (x * 2)[:lengths[0]]
    return y + 1, y.sum(0), x[:, 1:lengths[1]].exp(), x[lengths[2]:] - 1


def slice_by_item(x, lengths):
    n = lengths.max().item()
    return (x + 1)[:n] * 2


def compiled_calls(fn, calls, what):
    """fn compiled, called with each argument tuple of `calls`: eager's
    values, no break, at most two compiles, nothing run op by op."""
    tracejit.reset()
    cf = tracejit.compile(fn, backend=BACKEND)
    ok = True
    for args in calls:
        if not same(cf(*args), fn(*args)):
            ok = False
            print(f"  {fn.__name__} differs for {[a.tolist() if a.dim() < 2 else tuple(a.shape) for a in args]}")
    check(ok, f"{fn.__name__}: {what} equal eager")
    check_equal(counters()["graph_breaks"], 0, f"{fn.__name__}: no graph break")
    check(counters()["graphs_compiled"] <= 2, f"{fn.__name__}: compiled at most twice ({counters()['graphs_compiled']})")
    check_equal(counters()["backend_fallbacks"], 0, f"{fn.__name__}: compiled on {BACKEND}, not run op by op")
    return cf


for fn, scalars in ((slice_by_tensor, False), (slice_by_item, True)):
    tracejit.config.capture_scalar_outputs = scalars
    bounds = ((4, (2, 3, 1)), (5, (0, 4, -2)), (6, (9, 0, 3)), (7, (-3, 2, 8)), (9, (5, -1, 0)), (12, (12, 4, -12)))
    compiled_calls(fn, [(torch.randn(n, 4), torch.tensor(b)) for n, b in bounds],
                   "6 sizes and bounds (0, negative, past the end among them)")
tracejit.config.capture_scalar_outputs = False


# narrow by a 0-d tensor length (and start): read when the graph runs; a
# length past the end raises eager's error.
def narrow_by_tensor(x, lengths):
    return (x * 2).narrow(0, 0, lengths[0]) + 1, x.narrow(1, lengths[1], 1).sum()


tracejit.reset()
cf = tracejit.compile(narrow_by_tensor, backend=BACKEND)
ok = True
for n, bounds in ((4, (2, 3)), (5, (0, 0)), (6, (6, 1)), (7, (3, 2)), (9, (1, 3)), (12, (12, 0))):
    x, lengths = torch.randn(n, 4), torch.tensor(bounds)
    if not same(cf(x, lengths), narrow_by_tensor(x, lengths)):
        ok = False
        print(f"  narrow_by_tensor differs for {n} {bounds}")
check(ok, "narrow by a 0-d tensor: 6 sizes and lengths (0 and the whole dim among them) equal eager")
check_equal(counters()["graph_breaks"], 0, "narrow by a 0-d tensor: no graph break")
check(counters()["graphs_compiled"] <= 2, f"narrow by a 0-d tensor: compiled at most twice ({counters()['graphs_compiled']})")
try:
    cf(torch.randn(3, 4), torch.tensor([5, 0]))
    check(False, "narrow past the end raises")
except RuntimeError as e:
    check("exceeds dimension size" in str(e), f"narrow past the end raises eager's error: {e}")


# A broadcast against bincount's data-dependent size (a GNN's global mean
# pool, tests/probes/p11_gnn.py: sums over 2 graphs divided by the node
# counts per graph): the count is taken to be the other operand's size, as
# TorchDynamo's size-oblivious broadcast of an unbacked size (it used to
# fail meta inference on the placeholder size and break the graph). A
# count of 1 broadcasts; another raises eager's error.
def mean_pool(x, batch):
    s = torch.zeros(2, x.size(-1)).scatter_add_(0, batch.unsqueeze(-1).expand_as(x), x * 2)
    cnt = torch.bincount(batch, minlength=2).clamp(min=1).unsqueeze(-1).to(x.dtype)
    return (s / cnt).relu() + 1, cnt.sum()


def rows_over_counts(x, batch):
    return (x[:2] + 1) / torch.bincount(batch).unsqueeze(-1) * 3


def two_graphs(n, zeros=False):
    batch = torch.zeros(n, dtype=torch.long)
    if not zeros:
        batch[torch.randperm(n)[: n // 2]] = 1
    return torch.randn(n, 3), batch


for fn, zeros in ((mean_pool, (5,)), (rows_over_counts, (6, 12))):
    cf = compiled_calls(fn, [two_graphs(n, n in zeros) for n in (4, 5, 6, 7, 9, 12, 15)],
                        "bincount broadcast, 7 sizes (one bin among them)")
try:
    cf(torch.randn(5, 3), torch.tensor([0, 1, 2, 2, 1]))
    check(False, "rows_over_counts: 3 bins against 2 rows raises")
except RuntimeError as e:
    check("must match the size" in str(e), f"rows_over_counts: 3 bins against 2 rows raises eager's error: {e}")


# A list (or tuple) sliced by a 0-d tensor: Python needs the value now, so
# the graph breaks there with a reason (it used to crash the tracer).
def list_by_tensor(x, lengths):
    parts = [x * 1, x * 2, x * 3, x * 4]
    keep = parts[:lengths[0]]
    return sum(p.sum() for p in keep) + x[:lengths[1]].sum()


tracejit.reset()
cf = tracejit.compile(list_by_tensor, backend=BACKEND)
ok = True
for n, bounds in ((4, (2, 3)), (5, (0, 1)), (6, (4, 6)), (7, (9, 2))):
    x, lengths = torch.randn(n, 4), torch.tensor(bounds)
    ok = ok and same(cf(x, lengths), list_by_tensor(x, lengths))
check(ok, "list[:t] with a 0-d tensor t: equal eager")
ex = tracejit.explain(list_by_tensor)(torch.randn(4, 4), torch.tensor([2, 3]))
reasons = " ".join(str(b) for b in ex.break_reasons)
check("slice bounded by a tensor" in reasons, f"list[:t] breaks with a reason naming the tensor bound: {reasons}")


# A fact on a data-dependent size tested in Python: a clean break, both branches right.
def empty_check(x):
    idx = torch.nonzero(x > 0)
    if idx.numel() == 0:
        return x * 0
    return idx.float().mean(0) + x.sum()


tracejit.reset()
cf = tracejit.compile(empty_check, backend=BACKEND)
ok = all(same(cf(x), empty_check(x)) for x in inputs())
check(ok, "if idx.numel() == 0: both branches equal eager")
check(counters()["graph_breaks"] >= 1, "if idx.numel() == 0: the graph breaks at the fact")
ex = tracejit.explain(empty_check)(torch.randn(4, 4))
reasons = " ".join(str(b) for b in ex.break_reasons)
check("depends on tensor data" in reasons, f"the break names the data-dependent size: {reasons}")


# Facts every size satisfies (a size is never negative): decided without a
# guard or a break, even on a data-dependent size.
def decidable_facts(x):
    idx = torch.nonzero(x > 0)
    y = x[x > 0]
    if idx.numel() >= 0 and len(y) != -1 and not (y.shape[0] < 0):
        return idx.float().sum(0) + y.sum()
    return x


tracejit.reset()
cf = tracejit.compile(decidable_facts, backend=BACKEND)
check(all(same(cf(x), decidable_facts(x)) for x in inputs()), "facts true for every size: equal eager")
check_equal(counters()["graph_breaks"], 0, "facts true for every size (numel() >= 0): no break")
check(counters()["graphs_compiled"] <= 2, f"facts true for every size: compiled at most twice ({counters()['graphs_compiled']})")


# The frame resumed after that break takes the data-dependent tensor: its
# data-dependent dim is traced dynamic from the resumed frame's first
# compile (the graph marks it), so 6 counts compile the resumed frame once.
def with_k_positive(k):
    x = -torch.rand(4, 4) - 1
    x.view(-1)[:k] = torch.rand(k) + 1
    return x


tracejit.reset()
cf = tracejit.compile(empty_check, backend=BACKEND)
xs = [with_k_positive(k) for k in (2, 3, 5, 7, 9, 12)]
check(all(same(cf(x), empty_check(x)) for x in xs), "resumed after the break, 6 counts: equal eager")
check(counters()["graphs_compiled"] <= 2,
      f"resumed after the break: the frame and its resumed part compile once each over 6 counts "
      f"({counters()['graphs_compiled']})")


# Such a size formatted, printed, returned or passed on: its real value,
# never the placeholder (a break where Python needs it).
def size_uses(x):
    y = x[x > 0]
    print(f"kept {y.shape} {len(y)}")
    n = len(y)
    return y.shape[0], n + 1, max(n, 3), list(y.shape), torch.zeros(n, 2), y.view(n, 1) * 2, y.size(0) // 2


tracejit.reset()
cf = tracejit.compile(size_uses, backend=BACKEND)
ok = True
for x in inputs():
    got_out, want_out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(got_out):
        got = cf(x)
    with contextlib.redirect_stdout(want_out):
        want = size_uses(x)
    if not same(got, want) or got_out.getvalue() != want_out.getvalue():
        ok = False
        print(f"  size_uses differs for {tuple(x.shape)}: {got_out.getvalue()!r} vs {want_out.getvalue()!r}")
check(ok, "a data-dependent size printed, returned and passed on: values and printed text equal eager")


# range(n) of such a size: specialized in Python, so a break, never a wrong loop count.
def loop_count(x):
    y = x[x > 0]
    acc = x.sum()
    for i in range(len(y)):
        acc = acc + i
    return acc


tracejit.reset()
cf = tracejit.compile(loop_count, backend=BACKEND)
check(all(same(cf(x), loop_count(x)) for x in inputs()), "range(len(x[mask])): equal eager")


# Training through a masked loss: gradients equal eager's.
def masked_loss(w, x, tgt):
    out = torch.tanh(x @ w)
    mask = tgt.abs() > 0.3
    return F.mse_loss(out[mask], tgt[mask])


tracejit.reset()
cf = tracejit.compile(masked_loss, backend=BACKEND)
ok = True
for n in SIZES:
    x, tgt = torch.randn(n, 5), torch.randn(n, 3)
    w1 = torch.randn(5, 3, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_(True)
    l1 = cf(w1, x, tgt)
    l1.backward()
    l2 = masked_loss(w2, x, tgt)
    l2.backward()
    ok = ok and torch.allclose(l1, l2, rtol=1e-5, atol=1e-6) and torch.allclose(w1.grad, w2.grad, rtol=1e-5, atol=1e-6)
check(ok, "a masked mse loss: losses and gradients equal eager over 6 sizes")
check_equal(counters()["graph_breaks"], 0, "a masked mse loss: no graph break")


# A small transformer LM: padding mask from lengths, the loss over the real tokens.
class TinyLM(torch.nn.Module):
    def __init__(self, vocab=23, dim=16):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.layer = torch.nn.TransformerEncoderLayer(dim, 2, 32, dropout=0.0, batch_first=True)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens, lengths):
        t = tokens.shape[1]
        pad = torch.arange(t)[None, :] >= lengths[:, None]
        h = self.layer(self.emb(tokens), src_key_padding_mask=pad)
        logits = self.head(h)
        keep = ~pad
        return F.cross_entropy(logits[keep], tokens[keep])


torch.manual_seed(1)
model = TinyLM()
twin = TinyLM()
twin.load_state_dict(model.state_dict())
tracejit.reset()
cm = tracejit.compile(model, backend=BACKEND)
ok = True
for b, t in ((2, 5), (3, 7), (2, 6), (4, 5), (3, 9), (2, 8)):
    tokens = torch.randint(0, 23, (b, t))
    lengths = torch.randint(1, t + 1, (b,))
    model.zero_grad()
    twin.zero_grad()
    l1 = cm(tokens, lengths)
    l1.backward()
    l2 = twin(tokens, lengths)
    l2.backward()
    ok = ok and torch.allclose(l1, l2, rtol=1e-4, atol=1e-5)
    for p1, p2 in zip(model.parameters(), twin.parameters()):
        ok = ok and torch.allclose(p1.grad, p2.grad, rtol=1e-4, atol=1e-5)
check(ok, "a transformer LM with a padding mask from lengths: losses and gradients equal eager")

# The dynamic log names each data-dependent size, the op and the line it
# came from, and the parts compiled around it.
HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(HERE, "..", "..", "build")), "tracejit")
child = """
import torch, tracejit
def f(x):
    return (x * 2)[x > 0].sum()
cf = tracejit.compile(f, backend="aot_eager")
cf(torch.randn(5, 2))
"""
r = subprocess.run([LAUNCHER, "--log", "dynamic", "-c", child], capture_output=True, text=True, timeout=120)
log = r.stderr
check(r.returncode == 0 and "has an unbacked size (known when the graph runs) from aten::index.Tensor (at " in log
      and ":4)" in log and "compiled for sizes" in log,
      f"the dynamic log names the data-dependent size, its op and line, and the compile after it: {log.strip()[-600:]!r}")

# Many counts: the part after the data-dependent op compiles from one AOT
# size template once three counts of 2 or more were captured (counts 0 and
# 1 compile on their own), so AOT stops capturing: the second batch of
# counts (all new) captures nothing (Deliver item 2; review (a), (b)).
def after_mask(x):
    y = (x + 1)[x > 0]
    return y.exp() * 2, y.sum(), y.unsqueeze(1) * y.sum()


def with_positive(n, k):
    x = -torch.rand(n) - 1
    x[torch.randperm(n)[:k]] = torch.rand(k) + 1
    return x


COMPILING = BACKEND != "eager"
for shape_varies in (False, True):
    tracejit.reset()
    cf = tracejit.compile(after_mask, backend=BACKEND)
    what = f"after x[mask], {'input sizes and ' if shape_varies else ''}counts 0..39"
    ok, captured_after_first = True, None
    for k in range(40):
        if k == 20:
            captured_after_first = counters()["aot_captures"]
        x = with_positive(40 + (k if shape_varies else 0), k)
        if not same(cf(x), after_mask(x)):
            ok = False
            print(f"  after_mask differs for count {k}")
    check(ok, f"{what}: values equal eager (count 0: empty results, count 1 among them)")
    check(counters()["graphs_compiled"] <= 2, f"{what}: compiled at most twice ({counters()['graphs_compiled']})")
    check_equal(counters()["graph_breaks"], 0, f"{what}: no graph break")
    if COMPILING:
        check_equal(counters()["aot_captures"], captured_after_first,
                    f"{what}: counts 20..39 capture nothing more ({captured_after_first} captures for counts 0..19)")
        check(counters()["aot_size_reuses"] >= 20,
              f"{what}: the stages compile from their AOT size templates ({counters()['aot_size_reuses']} reuses)")
        check_equal(counters()["sizes_run_op_by_op"], 0, f"{what}: no count runs op by op")

# Counts 0 and 1 (an empty and a one-element result) compile on their own,
# never from the template made of larger counts, whatever order they come in.
tracejit.reset()
cf = tracejit.compile(after_mask, backend=BACKEND)
ok = True
for k in (5, 6, 7, 8, 0, 1, 9, 1, 0, 2):
    x = with_positive(12, k)
    ok = ok and same(cf(x), after_mask(x))
check(ok, "counts 0 and 1 after a template of larger counts: values (empty results among them) equal eager")
check(counters()["graphs_compiled"] <= 2, f"counts 0 and 1: compiled at most twice ({counters()['graphs_compiled']})")

# Past 64 distinct sizes a stage with no AOT size template runs op by op:
# counted in sizes_run_op_by_op, values still eager's (review (d)).
tracejit.reset()
tracejit.config.aot_size_templates = False
cf = tracejit.compile(after_mask, backend=BACKEND)
ok = True
for k in range(70):
    x = with_positive(80, k)
    ok = ok and same(cf(x), after_mask(x))
tracejit.config.aot_size_templates = True
check(ok, "70 counts without AOT size templates: values equal eager")
check_equal(counters()["sizes_run_op_by_op"], 6 if COMPILING else 0,
            "70 counts without templates: the 6 past the 64 compiled run op by op (sizes_run_op_by_op)")
check_equal(counters()["graph_breaks"], 0, "70 counts without templates: no graph break")
tracejit.reset()
cf = tracejit.compile(after_mask, backend=BACKEND)
ok = all(same(cf(x), after_mask(x)) for x in (with_positive(80, k) for k in range(70)))
check(ok, "70 counts with AOT size templates: values equal eager")
check_equal(counters()["sizes_run_op_by_op"], 0, "70 counts with templates: every count compiled (none op by op)")


# .item() and .tolist() ints feeding shapes (a factory's sizes, a slice, a
# view) under capture_scalar_outputs: no break, one compile for every value
# (review (c)).
def factory_by_item(x, lengths):
    n = lengths[0].item()
    return torch.zeros(n, 2) + x.sum(), x.new_ones((n,)) * 2, torch.full((n, 1), 3.0)


def slice_by_tolist(x, lengths):
    a, b = lengths.tolist()
    return (x + 1)[:a] * 2, x[a:b].sum(0), torch.ones(b, 3) * x.mean()


tracejit.config.capture_scalar_outputs = True
for fn in (factory_by_item, slice_by_tolist):
    tracejit.reset()
    cf = tracejit.compile(fn, backend=BACKEND)
    ok = True
    for n, bounds in ((4, (1, 3)), (5, (2, 4)), (6, (0, 5)), (7, (3, 3)), (9, (6, 8)), (12, (0, 0))):
        x, lengths = torch.randn(n, 4), torch.tensor(bounds)
        if not same(cf(x, lengths), fn(x, lengths)):
            ok = False
            print(f"  {fn.__name__} differs for {n} {bounds}")
    check(ok, f"{fn.__name__}: 6 sizes and values (0 among them) equal eager")
    check_equal(counters()["graph_breaks"], 0, f"{fn.__name__}: no graph break")
    check(counters()["graphs_compiled"] <= 2, f"{fn.__name__}: compiled at most twice ({counters()['graphs_compiled']})")
    if COMPILING:
        check_equal(counters()["backend_fallbacks"], 0, f"{fn.__name__}: compiled on {BACKEND}, not run op by op")
tracejit.config.capture_scalar_outputs = False


# The config turns it off: the old break at the data-dependent op.
tracejit.reset()
tracejit.config.capture_dynamic_output_shape_ops = False
cf = tracejit.compile(mask_index, backend=BACKEND)
ok = all(same(cf(x), mask_index(x)) for x in inputs())
check(ok, "capture_dynamic_output_shape_ops=False: values equal eager")
check(counters()["graph_breaks"] >= 1, "capture_dynamic_output_shape_ops=False: the graph breaks at x[mask]")
tracejit.config.capture_dynamic_output_shape_ops = True

finish()
