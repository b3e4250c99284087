"""Dynamic shapes, AOT once (issue 15, item 3): an entry with dynamic dims
compiled by an AOT backend makes one AOT graph of the capture of its first
size and probes at sizes of its choosing (runtime/size_probes.h; else of the
captures of its first sizes) (its size-dependent ints become expressions of the input sizes,
graph/size_template.h) and compiles every later size from it without
capturing again (counters `aot_captures`, `aot_size_reuses`). With the llvm
and aot_eager backends the programs of the first three sizes the template
serves become one program for every size (jit/program_template.h: no passes, no lowering for
later sizes, counter `program_size_reuses`, no limit of 256 sizes). Results
are bit for bit those of capturing every size (config.aot_size_templates=False)
and match eager; what the template cannot serve is captured as before."""
import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

torch.manual_seed(0)
AOT = BACKEND != "eager"  # aot_eager and llvm run AOT; eager does not
ONE_PROGRAM = BACKEND in ("llvm", "aot_eager")  # backends with one program for every size


def counters():
    c = tracejit.counters()
    return c["frames_traced"], c["aot_captures"], c["aot_size_reuses"]


class Block(torch.nn.Module):
    """A transformer block: causal self-attention, layer norms, an MLP."""

    def __init__(self, c=32, h=4, maxlen=64):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = torch.nn.LayerNorm(c), torch.nn.LayerNorm(c)
        self.qkv, self.proj = torch.nn.Linear(c, 3 * c), torch.nn.Linear(c, c)
        self.fc1, self.fc2 = torch.nn.Linear(c, 4 * c), torch.nn.Linear(4 * c, c)
        self.register_buffer("mask", torch.tril(torch.ones(maxlen, maxlen)).view(1, 1, maxlen, maxlen))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
        k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
        v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.h) ** 0.5)
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


# Batch and sequence length both vary, independently.
SIZES = [(2, 5), (3, 7), (5, 6), (4, 11), (7, 9), (6, 13), (8, 4), (9, 8), (3, 10), (5, 12)]
block = Block().eval()
inputs = [torch.randn(b, t, 32) for b, t in SIZES]


def run_block(templates):
    tracejit.reset()
    tracejit.config.aot_size_templates = templates
    cm = tracejit.compile(block, backend=BACKEND)
    with torch.no_grad():
        return [cm(x) for x in inputs], counters()


def program_reuses():
    return tracejit.counters()["program_size_reuses"]


with torch.no_grad():
    eager = [block(x) for x in inputs]
got, (traced, captures, reuses) = run_block(True)
check(all(torch.allclose(g, e, rtol=1e-5, atol=1e-5) for g, e in zip(got, eager)),
      "transformer block: 10 (batch, sequence) sizes match eager")
check(traced <= 2, f"transformer block: compiled at most twice for 10 sizes ({traced} traces)")
if AOT:
    # one static capture, one of the dynamic entry, then the template (made
    # with probes at sizes of our choosing, runtime/size_probes.h)
    check_equal((captures, reuses), (2, 8), "transformer block: AOT captures, sizes served by the template")
    check(tracejit.counters()["aot_size_probes"] >= 3, "transformer block: the template came from probes")
    # the template's first three sizes are lowered; of the last five, the
    # one program (made from three sizes with batch < sequence) serves the
    # three that keep that order: its fit may rely on it
    # (graph/size_template.h, orders), so (8, 4) and (9, 8) are lowered on
    # their own
    check_equal(program_reuses(), 3 if ONE_PROGRAM else 0, "transformer block: sizes served by one program")
else:
    check_equal((captures, reuses), (0, 0), "eager backend: no AOT")
per_size, (_, captures_off, reuses_off) = run_block(False)
tracejit.config.aot_size_templates = True
check(all(torch.equal(a, b) and a.stride() == b.stride() for a, b in zip(got, per_size)),
      "transformer block: bit for bit what capturing every size gives")
if AOT:
    check_equal((captures_off, reuses_off), (10, 0), "aot_size_templates=False: every size captured")

# Pointwise and reduction work over one dynamic batch dim (dynamic=True: one trace).


def norm_relu_sum(x, w, b):
    y = torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b)
    return torch.relu(y * 2 + 1).sum(-1), (y - y.mean(0)).abs().amax(0)


tracejit.reset()
w, b = torch.randn(64), torch.randn(64)
fn = tracejit.compile(norm_relu_sum, backend=BACKEND, dynamic=True)
ok = True
for n in [8, 16, 24, 40, 48, 56, 3, 100]:
    x = torch.randn(n, 64)
    got_pair, want_pair = fn(x, w, b), norm_relu_sum(x, w, b)
    ok = ok and all(torch.allclose(g, e, rtol=1e-5, atol=1e-5) for g, e in zip(got_pair, want_pair))
check(ok, "pointwise + reductions: 8 batch sizes match eager")
traced, captures, reuses = counters()
check_equal(traced, 1, "pointwise + reductions: one trace")
if AOT:
    check_equal((captures, reuses), (1, 7), "pointwise + reductions: 1 capture and probes, then the template")

# Sizes that move in lockstep (T = 2B + 1) cannot tell B from T apart: no
# template until a size that does; every result still eager's.
tracejit.reset()
cm = tracejit.compile(block, backend=BACKEND)
lockstep = [(2, 5), (3, 7), (4, 9), (5, 11), (6, 13), (7, 4), (8, 6), (3, 12)]
ok = True
with torch.no_grad():
    for bsz, t in lockstep:
        x = torch.randn(bsz, t, 32)
        ok = ok and torch.allclose(cm(x), block(x), rtol=1e-5, atol=1e-5)
check(ok, "lockstep sizes, then others: match eager")
if AOT:
    traced, captures, reuses = counters()
    check_equal((captures, reuses), (6, 2), "lockstep sizes: captured until B and T were told apart")

# Outputs that view an input or an intermediate: their view geometry is
# fitted like the graph's ints; they come back as views of the right base.


def views(x):
    return x[:, :2], x.transpose(0, 1), (x * 2).view(-1)[3:]


tracejit.reset()
fv = tracejit.compile(views, backend=BACKEND, dynamic=True)
ok = True
for n in [4, 6, 9, 12, 15, 7]:
    x = torch.randn(n, 5)
    got_views, want_views = fv(x), views(x)
    ok = ok and all(torch.equal(g, e) and g.stride() == e.stride() for g, e in zip(got_views, want_views))
    ok = ok and got_views[0]._base is x and got_views[1]._base is x
check(ok, "views of an input and of an intermediate as outputs: 6 sizes match eager")
if AOT:
    check_equal(counters()[1:], (1, 5), "views as outputs: 1 capture and probes, then the template")

# An int of no form the template knows ((T // 3) * 2): every size is
# captured, as before.


def two_thirds(x):
    return x[:, : (x.shape[1] // 3) * 2] * 2


tracejit.reset()
ft = tracejit.compile(two_thirds, backend=BACKEND, dynamic=True)
ok = True
for t in [4, 6, 9, 12, 15, 7, 10]:
    x = torch.randn(3, t)
    ok = ok and torch.equal(ft(x), two_thirds(x))
check(ok, "(T // 3) * 2: 7 sizes match eager")
if AOT:
    check_equal(counters()[1:], (7, 0), "(T // 3) * 2: no template, every size captured")

# Dims equal in every capture form one size; when they later differ the
# template does not serve the call, which is captured instead.


def two_sums(x, y):
    return x.sum(0) * 2, (y * 3).sum(0)


tracejit.reset()
f2 = tracejit.compile(two_sums, backend=BACKEND, dynamic=True)
ok = True
for n, m in [(4, 4), (6, 6), (9, 9), (5, 5), (7, 3), (8, 11)]:
    x, y = torch.randn(n, 3), torch.randn(m, 3)
    ok = ok and all(torch.allclose(g, e, rtol=1e-5, atol=1e-5) for g, e in zip(f2(x, y), two_sums(x, y)))
check(ok, "dims equal in every capture, then not: match eager")
if AOT:
    # (4, 4) captured, (6, 6) probed from it (one class), (9, 9) and (5, 5)
    # served; (7, 3) and (8, 11) captured again
    check_equal(counters()[1:], (3, 3), "dims equal in every capture, then not: captured again")

# Training steps with grad (the joint graph: its tangents' sizes follow the
# outputs'): a variable batch captures its first sizes, then the template
# serves the rest, each size partitioned again; losses and gradients are
# bit for bit those of capturing every size, and match eager.


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.ln, self.fc2 = torch.nn.Linear(32, 64), torch.nn.LayerNorm(64), torch.nn.Linear(64, 10)

    def forward(self, x):  # flatten: a view whose sizes (and its gradient's) are size expressions
        return self.fc2(self.ln(torch.nn.functional.gelu(self.fc1(x.flatten(1)))))


classifier = Classifier()
BATCHES = [4, 6, 9, 5, 12, 7, 10, 3]
batches = [(torch.randn(n, 4, 8, requires_grad=True), torch.randint(0, 10, (n,))) for n in BATCHES]


def loss_of(x, target):
    return torch.nn.functional.cross_entropy(classifier(x), target)


def train(fn):
    results = []
    for x, target in batches:
        classifier.zero_grad()
        loss = fn(x, target)
        loss.backward()
        results.append([loss.detach(), x.grad.clone()] + [p.grad.clone() for p in classifier.parameters()])
        x.grad = None
    return results


def train_compiled(templates):
    tracejit.reset()
    tracejit.config.aot_size_templates = templates
    results = train(tracejit.compile(loss_of, backend=BACKEND))
    tracejit.config.aot_size_templates = True
    return results, counters()


want = train(loss_of)
got, (traced, captures, reuses) = train_compiled(True)
train_program_reuses = program_reuses()
check(all(torch.allclose(g, w, rtol=1e-5, atol=1e-6) for gs, ws in zip(got, want) for g, w in zip(gs, ws)),
      "training with grad: losses and gradients of 8 batch sizes match eager")
check_equal(traced, 2, "training with grad: traced twice (static, then dynamic)")
if AOT:
    check_equal((captures, reuses), (2, 6), "training with grad: AOT captures (then probes), sizes served by the template")
    check_equal(train_program_reuses, 3 if ONE_PROGRAM else 0,
                "training with grad: the last three sizes served by one forward and one backward program")
per_size, (_, captures_off, _) = train_compiled(False)
check(all(torch.equal(a, b) for gs, ps in zip(got, per_size) for a, b in zip(gs, ps)),
      "training with grad: bit for bit what capturing every size gives")
if AOT:
    check_equal(captures_off, 8, "training with grad, aot_size_templates=False: every size captured")

# Many sizes: past the first ones, one program serves them all (llvm,
# aot_eager), with no limit of 256 sizes; the eager backend compiles 256 and
# runs the rest op by op. Every result matches eager.
tracejit.reset()
fm = tracejit.compile(norm_relu_sum, backend=BACKEND, dynamic=True)
ok = True
for n in range(2, 302):
    x = torch.randn(n, 64)
    ok = ok and all(torch.allclose(g, e, rtol=1e-5, atol=1e-5) for g, e in zip(fm(x, w, b), norm_relu_sum(x, w, b)))
check(ok, "300 batch sizes match eager")
c = tracejit.counters()
if ONE_PROGRAM:
    check_equal((c["aot_captures"], c["program_size_reuses"], c["sizes_run_op_by_op"]), (1, 296, 0),
                "300 batch sizes: 1 capture (and probes), 3 sizes lowered, then one program for the other 296")
else:
    check_equal(c["sizes_run_op_by_op"], 300 - 1 - 256, "300 batch sizes: past 256 compiled, op by op")

finish()
