"""Dynamic shapes, second part (issue 15 item 1): symbolic sizes. With a
dynamic dim, a size read into Python (x.shape[0], x.size(1), x.size(),
len(x), x.numel(), `B, T, C = x.shape`) is a symbolic int: arithmetic on it
stays symbolic and feeds view/reshape/expand/torch.ones/arange/slicing
without specializing; a comparison of sizes guards exactly that fact (one
entry per side of a branch); a size used as a number (float(), math.sqrt(),
with a tensor: size_numbers.py) is a graph input; any other concrete use
(range()) guards the size's value. Sizes of intermediates work the same
way: one that stays constant (a head dim) never recompiles. A nanoGPT block
compiles at most twice for 10 (B, T) pairs; the `recompiles` log names the
failing size fact."""
import copy
import functools
import math
import operator
import os
import subprocess

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

torch.manual_seed(0)


def traced():
    return tracejit.counters()["frames_traced"]


def close(a, b):
    return torch.allclose(a, b, rtol=1e-5, atol=1e-6)


def flat(x):
    return x.view(x.shape[0], -1) * 2


# 1. x.shape[0] into view: dynamic=None retraces once, dynamic=True traces once.
tracejit.reset()
ff = tracejit.compile(flat, backend=BACKEND)
ok = all(torch.equal(ff(x), flat(x)) for x in (torch.randn(n, 2, 3) for n in range(2, 12)))
check(ok, "x.shape[0] into view: 10 sizes match eager")
check_equal(traced(), 2, "x.shape[0] into view, dynamic=None: 2 traces for 10 sizes (the size stays symbolic)")
check_equal(tracejit.counters()["recompiles"], 1, "x.shape[0] into view, dynamic=None: one recompile")
tracejit.reset()
ff = tracejit.compile(flat, backend=BACKEND, dynamic=True)
ok = all(torch.equal(ff(x), flat(x)) for x in (torch.randn(n, 2, 3) for n in range(2, 12)))
check(ok, "x.shape[0] into view, dynamic=True: 10 sizes match eager")
check_equal(traced(), 1, "x.shape[0] into view, dynamic=True: 1 trace for 10 sizes")


# 2. Unpacked sizes, len(), numel(), size() and arithmetic on them, into tensor ops.
def unpacked(x):
    B, T, C = x.shape
    return x.reshape(B * T, C).sum(1).view(B, T)


def with_len(x):
    return x.reshape(len(x), -1) + torch.ones(len(x), 1)


def with_numel(x):
    return x.flatten() + torch.arange(x.numel())


def with_size(x):
    s = x.size()
    return torch.zeros(s) + x.unsqueeze(0).expand(2, *s)


def arith(x):
    B, T, C = x.size()
    y = x.reshape(B, T * C)[:, : T * C - T % 2]
    return y.sum(1) + torch.zeros(B + 1 - 1) + x.view(B, -1, C)[:, : T // 2 + 1].sum((1, 2))


SHAPES = [(2, 5, 6), (3, 7, 4), (5, 2, 9), (6, 10, 5), (4, 6, 7)]
for fn in (unpacked, with_len, with_numel, with_size, arith):
    tracejit.reset()
    cf = tracejit.compile(fn, backend=BACKEND, dynamic=True)
    ok = all(close(cf(x), fn(x)) for x in (torch.randn(*s) for s in SHAPES))
    check(ok, f"{fn.__name__}: 5 shapes match eager")
    check_equal(traced(), 1, f"{fn.__name__}, dynamic=True: 1 trace for 5 shapes")


# 3. A nanoGPT block: B, T, C = x.size(), a causal mask sliced by T, a head dim under math.sqrt.
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=32, n_head=4, block_size=32):
        super().__init__()
        self.n_head = n_head
        self.c_attn, self.c_proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
        self.register_buffer("mask", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd=32, n_head=4):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


# B in 2..5, T in 2..32, both varied (the first two pairs differ in both; B != T everywhere).
PAIRS = [(2, 8), (3, 5), (4, 32), (5, 2), (2, 17), (3, 31), (4, 9), (5, 12), (2, 3), (3, 24)]
block = Block().eval()
tracejit.reset()
cblock = tracejit.compile(block, backend=BACKEND)
ok = True
with torch.no_grad():
    for B, T in PAIRS:
        x = torch.randn(B, T, 32)
        ok = ok and torch.allclose(cblock(x), block(x), rtol=1e-4, atol=1e-5)
check(ok, "transformer block, eval + no_grad: 10 (B, T) pairs match eager")
check(traced() <= 2, f"transformer block: compiles at most twice for 10 sizes ({traced()} traces)")

# A training step of the block (backward() outside the compiled function): losses and gradients.
tblock = Block().train()
ref = copy.deepcopy(tblock)


def block_loss(m, x):
    return m(x).pow(2).mean()


tracejit.reset()
closs = tracejit.compile(block_loss, backend=BACKEND)
ok = True
for B, T in [(2, 6), (3, 11), (4, 20), (5, 3)]:
    x = torch.randn(B, T, 32)
    tblock.zero_grad()
    ref.zero_grad()
    got, want = closs(tblock, x), block_loss(ref, x)
    got.backward()
    want.backward()
    ok = ok and torch.allclose(got, want, rtol=1e-4, atol=1e-5)
    ok = ok and all(torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-5)
                    for p, q in zip(tblock.parameters(), ref.parameters()))
check(ok, "transformer block, training: 4 (B, T) pairs: losses and gradients match eager")
check(traced() <= 2, f"transformer block, training: compiles at most twice for 4 sizes ({traced()} traces)")


# 4. A shape-dependent branch: one entry per side, whatever the size.
def branchy(x):
    if x.shape[0] > 16:
        return x.sum(0)
    return x.mean(0)


tracejit.reset()
fb = tracejit.compile(branchy, backend=BACKEND, dynamic=True)
ok = all(close(fb(x), branchy(x)) for x in (torch.randn(n, 3) for n in (4, 20, 8, 30, 16, 17, 5, 40)))
check(ok, "x.shape[0] > 16: each of 8 sizes takes eager's branch")
check_equal(traced(), 2, "x.shape[0] > 16: 2 traces for 8 sizes (one per side of the branch)")
check_equal(tracejit.counters()["recompiles"], 1, "x.shape[0] > 16: one recompile")


# 5. A fact that holds for a while, then breaks.
def mod8(x):
    if x.shape[0] % 8 == 0:
        return x * 2
    return x - 1


tracejit.reset()
fm = tracejit.compile(mod8, backend=BACKEND, dynamic=True)
ok = all(torch.equal(fm(x), mod8(x)) for x in (torch.randn(n, 3) for n in (8, 16, 24)))
check(ok, "x.shape[0] % 8 == 0: sizes 8, 16, 24 match eager")
check_equal(traced(), 1, "x.shape[0] % 8 == 0: 1 trace while the fact holds")
x = torch.randn(12, 3)
check(torch.equal(fm(x), mod8(x)), "x.shape[0] % 8 == 0: size 12 matches eager")
check_equal(traced(), 2, "x.shape[0] % 8 == 0: size 12 breaks the fact (a new trace)")
x = torch.randn(20, 3)
check(torch.equal(fm(x), mod8(x)), "x.shape[0] % 8 == 0: size 20 matches eager")
check_equal(traced(), 2, "x.shape[0] % 8 == 0: size 20 reuses the trace for size 12")


# 6. Equality between two inputs' sizes.
def pair(x, y):
    if x.shape[0] == y.shape[0]:
        return x + y
    return x.sum() + y.sum()


tracejit.reset()
fp = tracejit.compile(pair, backend=BACKEND, dynamic=True)
ok = all(close(fp(x, y), pair(x, y)) for x, y in ((torch.randn(n), torch.randn(n)) for n in (5, 7, 9)))
check(ok, "x.shape[0] == y.shape[0]: 3 equal pairs match eager")
check_equal(traced(), 1, "x.shape[0] == y.shape[0]: 1 trace for 3 equal pairs")
ok = all(close(fp(x, y), pair(x, y)) for x, y in ((torch.randn(n), torch.randn(m)) for n, m in ((4, 6), (6, 9), (10, 10))))
check(ok, "x.shape[0] == y.shape[0]: unequal pairs and an equal one after them match eager")
check_equal(traced(), 2, "x.shape[0] == y.shape[0]: 2 traces (one per side of the comparison)")


# 7. A concrete use (range()) specializes the size: a trace per size; float() does not (size_numbers.py).
def unrolled(x):
    acc = x[0]
    for i in range(1, x.shape[0]):
        acc = acc + x[i]
    return acc


def as_float(x):
    return torch.full((2,), float(x.shape[0])) + x.sum()


for fn, traces in ((unrolled, 3), (as_float, 1)):
    tracejit.reset()
    cf = tracejit.compile(fn, backend=BACKEND, dynamic=True)
    ok = all(close(cf(x), fn(x)) for x in (torch.randn(n, 4) for n in (5, 6, 7, 5)))
    check(ok, f"{fn.__name__}: sizes 5, 6, 7, 5 match eager")
    check_equal(traced(), traces, f"{fn.__name__}: {traces} trace(s) for sizes 5, 6, 7, 5")


# 8. A size returned to Python is a plain int.
def returns_size(x):
    return x * 2, x.shape[0] * 3


tracejit.reset()
fr = tracejit.compile(returns_size, backend=BACKEND, dynamic=True)
for n in (2, 5, 9):
    x = torch.randn(n, 4)
    (t, s), (t_ref, s_ref) = fr(x), returns_size(x)
    check(torch.equal(t, t_ref) and s == s_ref and type(s) is int,
          f"returned size, n={n}: {s!r} ({type(s).__name__}), eager {s_ref!r}")


# 9. math.sqrt of an intermediate's size that stays constant: never a recompile.
def scaled(x):
    k = x.view(x.shape[0], 4, -1)
    return (k @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))


tracejit.reset()
fsc = tracejit.compile(scaled, backend=BACKEND, dynamic=True)
ok = all(close(fsc(x), scaled(x)) for x in (torch.randn(n, 16) for n in (2, 5, 7, 9)))
check(ok, "math.sqrt(k.size(-1)) of an intermediate: 4 batch sizes match eager")
check_equal(traced(), 1, "math.sqrt(k.size(-1)) of an intermediate: 1 trace for 4 batch sizes")

# 10. min/max of sizes keep the size (the comparison is the fact); isinstance(n, int) guards nothing.
def clamped(x):
    T = min(x.shape[1], 8)
    return x[:, :T] * 2, isinstance(T, int), x.new_ones(max(T, x.shape[0])).sum()


tracejit.reset()
fcl = tracejit.compile(clamped, backend=BACKEND, dynamic=True)
ok = True
for T in (4, 6, 3):
    x = torch.randn(2, T)
    got, want = fcl(x), clamped(x)
    ok = ok and torch.equal(got[0], want[0]) and got[1] == want[1] and torch.equal(got[2], want[2])
check(ok, "min(T, 8) for T <= 8: eager's values")
check_equal(traced(), 1, "min(T, 8): 1 trace while T <= 8 (and max(T, B) keeps its side)")
for T in (10, 12):
    x = torch.randn(2, T)
    got, want = fcl(x), clamped(x)
    check(torch.equal(got[0], want[0]) and got[1] == want[1] and torch.equal(got[2], want[2]),
          f"min(T, 8) for T = {T}: eager's values")
check_equal(traced(), 2, "min(T, 8): T > 8 is the other side of the fact (one more trace)")


# 11. x.shape == y.shape compares item by item.
def same_shape(x, y):
    if x.shape == y.shape:
        return x + y
    return x.sum() + y.sum()


tracejit.reset()
fss = tracejit.compile(same_shape, backend=BACKEND, dynamic=True)
ok = all(torch.equal(fss(x, y), same_shape(x, y)) for x, y in
         ((torch.randn(3, 4), torch.randn(3, 4)), (torch.randn(5, 4), torch.randn(5, 4))))
check(ok, "x.shape == y.shape, equal shapes: eager's values")
check_equal(traced(), 1, "x.shape == y.shape: 1 trace for equal shapes")
x, y = torch.randn(5, 4), torch.randn(6, 4)
check(close(fss(x, y), same_shape(x, y)), "x.shape == y.shape, unequal: eager's values")
check_equal(traced(), 2, "x.shape == y.shape: unequal shapes take the other entry")

# 12. x.shape is a torch.Size, and len() of it is the rank: neither guards a size.
def size_type(x):
    s = x.shape
    return x * len(s), isinstance(s, torch.Size), type(s) is torch.Size, isinstance(s[0], int)


tracejit.reset()
fty = tracejit.compile(size_type, backend=BACKEND, dynamic=True)
ok = True
for n in (3, 5, 7):
    x = torch.randn(n, 2)
    got, want = fty(x), size_type(x)
    ok = ok and torch.equal(got[0], want[0]) and got[1:] == want[1:] == (True, True, True)
check(ok, "isinstance(x.shape, torch.Size), type(x.shape), len(x.shape): eager's answers")
check_equal(traced(), 1, "type and len of a symbolic shape: 1 trace for 3 sizes")

# 13. Sizes in every other place a program puts them: each compiled call gives eager's answer
# (found by a review of this feature; a trace per size where the number itself is used).
def g_print_shape(x):
    s = x.shape
    print(end="")  # a graph break with the shape live
    return torch.zeros(s)


def g_dict_by_shape(x):
    return x + {(2, 4): 2.0, (3, 4): 3.0, (4, 4): 4.0}[x.shape]


def g_rank(x):
    y = x[None].flatten(0, x.shape[0] % 2)  # the dim decides the rank
    return (x + 1 if y.ndim == 3 else x - 1), x[None].squeeze(x.shape[0] % 2).dim()


def g_sequence_methods(x):
    l = [10, 20, 30, 40, 50, 60]
    return x + l.pop(x.shape[0]), l, x.shape.count(3), x.shape.index(4)


def g_big_ints(x):
    return (x + 1 if x.shape[0] < 2 ** 64 else x - 1), x.shape[0] * 2 ** 62, x.shape[0] + 2 ** 64, x.shape[0] // 2 ** 64


def g_size_objects(x):
    return (x + 1 if isinstance(x.shape, torch.Size) else x - 1), x.shape, str(x.size()), x.size().numel(), \
        x.shape[1:], x.shape + (2,), x.new(x.shape).zero_() + 1


def g_misc(x):
    t = (x.sum() * 0 + 1).long()
    return torch.FloatTensor([x.shape[0]]) + x.sum() * 0, F.pad(x, (0, x.shape[0])), \
        [10, 20, 30, 40, 50, 60][t:x.shape[0]], (x + 1 if x.shape[0] is 3 else x - 1)


def g_text(x):
    torch._assert(x.dim() == 2, f"expected 2 dims, got {x.shape}")  # a message never shown: no guard
    text = f"{x.shape[0]}x{x.shape[1] * 2}: {x.size()!r}"  # the text itself: eager's, per size
    return x + len(text), text


def g_squeeze(x):  # a size that can be 1 decides the rank squeeze leaves
    z = x[: x.shape[0] - 2].squeeze(0)
    w = x.t()[:, : x.shape[0] - 2].squeeze(-1)
    return (z * 2 if z.dim() == 2 else z - 1), w.shape, torch.ones(x.shape[0] // 2, 2).squeeze().shape


def same_result(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.allclose(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same_result(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


for fn in (g_print_shape, g_dict_by_shape, g_rank, g_sequence_methods, g_big_ints, g_size_objects, g_misc, g_text,
           g_squeeze):
    for dynamic in (True, None):
        tracejit.reset()
        cfn = tracejit.compile(fn, backend=BACKEND, dynamic=dynamic)
        ok = True
        for n in (2, 3, 4, 3, 2):
            x = torch.randn(n, 4)
            ok = ok and same_result(cfn(x), fn(x))
        check(ok, f"{fn.__name__}, dynamic={dynamic}: eager's answers for sizes 2, 3, 4, 3, 2")


def flattened(x):  # the numel idioms of library code
    n = functools.reduce(operator.mul, x.shape[1:], 1)
    total = math.prod(x.shape)
    rows = operator.floordiv(total, n) if bool(x.shape[0]) else 0
    return x.reshape(rows, n) * 2, x.new_ones(total).sum()


tracejit.reset()
ffl = tracejit.compile(flattened, backend=BACKEND, dynamic=True)
ok = all(same_result(ffl(x), flattened(x)) for x in (torch.randn(n, 3, m) for n, m in ((2, 4), (3, 5), (5, 2))))
check(ok, "functools.reduce(operator.mul, x.shape[1:]), math.prod(x.shape), bool(n): eager's values")
check_equal(traced(), 1, "reduce/prod/operator/bool on sizes keep them symbolic (1 trace for 3 shapes)")


def by_shape(x, table):  # a dict input keyed by torch.Size and tuples; one built in the frame
    built = {x.shape: 1, (1, 2): 2}
    return x + table[x.shape] + built[(1, 2)] + len(built)


tracejit.reset()
fbs = tracejit.compile(by_shape, backend=BACKEND)
table = {torch.Size([3, 4]): 1.0, (5, 4): 2.0}
ok = all(torch.equal(fbs(x, table), by_shape(x, table)) for x in (torch.zeros(3, 4), torch.zeros(5, 4), torch.zeros(3, 4)))
check(ok, "dict input keyed by torch.Size / tuples, indexed by x.shape: eager's values")
check_equal(traced(), 2, "dict keyed by shapes: one trace per shape, no graph-break chain")


def asserted(x):
    torch._assert(x.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {x.shape}")
    return x * 2


tracejit.reset()
fas = tracejit.compile(asserted, backend=BACKEND, dynamic=True)
check(all(torch.equal(fas(x), x * 2) for x in (torch.randn(n, 3, 4) for n in (2, 3, 5))), "torch._assert with an f-string of x.shape")
check_equal(traced(), 1, "an f-string of sizes only used as an assert's message guards nothing (1 trace)")

# 14. The `recompiles` log names the size fact that failed.
if os.environ.get("TRACEJIT_BUILD_ROOT"):
    launcher = os.path.join(os.environ["TRACEJIT_BUILD_ROOT"], "tracejit")
    code = ("import torch, tracejit\n"
            "def f(x):\n    if x.shape[0] > 16:\n        return x.sum(0)\n    return x.mean(0)\n"
            f"c = tracejit.compile(f, backend={BACKEND!r}, dynamic=True)\n"
            "c(torch.ones(20, 3)); c(torch.ones(4, 3))\n")
    p = subprocess.run([launcher, "--log", "dynamic,recompiles", "-c", code], capture_output=True, text=True, timeout=120)
    check_equal(p.returncode, 0, "--log dynamic,recompiles run exits 0")
    # The first trace (size 20) relies on `size > 16`; size 4 fails that fact.
    check("the trace relies on SIZE_FACTS L['x'].size(0) > 16" in p.stderr, "--log dynamic: the facts a trace relies on")
    check("guard failed: SIZE_FACTS: L['x'].size(0) > 16 no longer holds" in p.stderr,
          "--log recompiles: names the failing size fact")
    check("L['x'] dims 0 (size 20), 1 (size 3) dynamic (dynamic=True)" in p.stderr,
          "--log dynamic: the dims made symbolic and why")
else:
    print("skip  --log checks (TRACEJIT_BUILD_ROOT not set)")

finish()
