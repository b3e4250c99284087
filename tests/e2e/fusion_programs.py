"""Programs whose graphs the llvm backend fuses beyond pointwise chains
(issue 12), compiled vs eager on every backend: reductions with the ops
around them (softmax, log_softmax, layer norm modules, mean-centering,
var/std, amax/argmax, sums with dtype), max pooling (decomposed into
window views for fusing backends: kernel/stride/padding/dilation/ceil_mode,
NaN and -inf inputs), float16/bfloat16 chains, and training through them
(gradients too). No backend may fall back."""
import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, finish

torch.manual_seed(0)


def compare(fn, *args, what, exact=False):
    try:
        want = fn(*args)
    except Exception as e:  # noqa: BLE001  eager raises: so must the compiled function
        try:
            tracejit.compile(fn)(*args)
            check(False, f"{what}: eager raised {type(e).__name__}, compiled did not")
        except type(e):
            check(True, f"{what}: raises {type(e).__name__} like eager")
        return
    got = tracejit.compile(fn)(*args)
    if exact:
        ok = all(torch.equal(g, w) and g.dtype == w.dtype for g, w in zip(got, want))
    else:
        ok = tracejit.same(got, want, equal_nan=True)
    check(ok, what)


x = torch.randn(16, 37)
w, b = torch.randn(37), torch.randn(37)
compare(lambda x: (torch.softmax(x * 2, -1) * 3, torch.log_softmax(x, 0)), x, what="softmax, log_softmax")
compare(lambda x, w, b: F.relu(F.layer_norm(x + 1, (37,), w, b)), x, w, b, what="layer_norm with relu")
compare(lambda x: (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True), x, what="mean-centering")
compare(lambda x: (x.var(0), x.var(1, correction=0), x.sum((0, 1)), x.mean()), x, what="var, sum, mean")
compare(lambda x: (x.amax(-1), x.amin(0, keepdim=True), x.argmax(-1), x.argmin(0), x.argmax()), x,
        what="amax/amin/argmax/argmin", exact=True)
i = torch.randint(-9, 9, (16, 37))
compare(lambda i: (i.sum(-1), (i > 0).sum(0), i.amax(1), i.sum(0, dtype=torch.float64)), i,
        what="integer and bool reductions", exact=True)
t = torch.randn(37, 16).t()
compare(lambda t: torch.softmax(t, -1) + t.sum(0, keepdim=True), t, what="reductions of a transposed input")
nan = x.clone()
nan[2, 5] = float("nan")
nan[3] = float("-inf")
compare(lambda x: (x.amax(-1), x.argmax(-1), torch.softmax(x, -1)), nan, what="NaN and -inf rows")

block = nn.Sequential(nn.Linear(37, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 10)).eval()
compare(lambda x: torch.softmax(block(x), -1), x, what="an MLP block ending in softmax")

img = torch.randn(2, 3, 17, 19)
for k, s, p, d, ceil in [(3, 2, 1, 1, False), (2, 2, 0, 1, False), (3, 1, 1, 1, False), (3, 2, 1, 2, False),
                         (3, 2, 0, 1, True), ((2, 3), (1, 2), (1, 0), 1, True)]:
    pool = nn.MaxPool2d(k, s, p, d, ceil_mode=ceil)
    compare(lambda x: pool(x).relu(), img, what=f"max_pool2d k={k} s={s} p={p} d={d} ceil={ceil}")
special = img.clone()
special[0, 0, 3, 4] = float("nan")
special[1, 2] = float("-inf")
compare(lambda x: F.max_pool2d(x, 3, 2, 1), special, what="max_pool2d with NaN and -inf")
compare(lambda x: F.max_pool2d(x, 2), torch.randn(3, 8, 8, dtype=torch.float64), what="max_pool2d of a 3-d float64 input")

for dtype in (torch.float16, torch.bfloat16):
    h, g = torch.randn(8, 33).to(dtype), torch.randn(33).to(dtype)
    compare(lambda h, g: ((h * 2 + g) - 0.3) * h, h, g, what=f"{dtype} chain", exact=True)
    compare(lambda h, g: (h + g).sum(-1), h, g, what=f"{dtype} sum")
    compare(lambda h: h.exp(), h, what=f"{dtype} exp")

# random ops on bfloat16 next to fused ops: compiling draws nothing from the
# generator (the first call's random numbers are eager's)
def noisy(h):
    return F.dropout(h, 0.5, training=True) * 2 + torch.rand_like(h)


h = torch.randn(64).to(torch.bfloat16)
torch.manual_seed(3)
want = noisy(h)
torch.manual_seed(3)
check(torch.equal(tracejit.compile(noisy)(h), want), "random bfloat16 ops: the first compiled call draws eager's numbers")

# training through fused reductions: gradients match
net = nn.Sequential(nn.Linear(37, 32), nn.LayerNorm(32), nn.Tanh(), nn.Linear(32, 5))
ref = nn.Sequential(nn.Linear(37, 32), nn.LayerNorm(32), nn.Tanh(), nn.Linear(32, 5))
ref.load_state_dict(net.state_dict())
target = torch.randint(0, 5, (16,))


def step(model, x):
    loss = F.cross_entropy(torch.log_softmax(model(x), -1), target)
    loss.backward()
    return loss


loss = tracejit.compile(step)(net, x)
want = step(ref, x)
check(tracejit.same(loss, want), "training loss through layer_norm/log_softmax")
check(all(tracejit.same(p.grad, q.grad) for p, q in zip(net.parameters(), ref.parameters())),
      "gradients through layer_norm/log_softmax")

check(tracejit.counters()["backend_fallbacks"] == 0, f"no backend fell back ({BACKEND}): {tracejit.counters()}")
finish()
