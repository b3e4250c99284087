"""Dynamic shapes: duck sizing (issue 15 item 1). An input size the graph
(or a fact) uses that equals an input size used before is that size's
symbol (one size node in the graph), and their equality is a size fact the
guard checks, which replaces a comparison of the two. Sizes read but never
used are not shared, so they add no fact. A call where shared sizes
differ fails that fact and is traced again, once: the new entry has a
symbol per size and serves the calls where they differ, the first still
serves those where they are equal. Sizes 0 and 1 are never symbols, so
they are never shared."""
import os
import subprocess

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

torch.manual_seed(0)


def traced():
    return tracejit.counters()["frames_traced"]


def same_rows(x, y):
    n, m = x.shape[0], y.shape[0]
    if n == m:
        return x.view(n, -1) + y.view(m, -1) * 2
    return x.sum() - y.sum()


# 1. Equal sizes share one symbol: the branch on n == m records nothing more.
tracejit.reset()
f = tracejit.compile(same_rows, backend=BACKEND, dynamic=True)
ok = True
for n in (8, 5, 7, 2):
    x, y = torch.randn(n, 3), torch.randn(n, 3)
    ok = ok and torch.allclose(f(x, y), same_rows(x, y))
check(ok, "equal row counts: 4 sizes match eager")
check_equal(traced(), 1, "equal row counts: one trace serves every size")

explained = tracejit.explain(same_rows)
x, y = torch.randn(6, 3), torch.randn(6, 3)
tracejit.mark_dynamic(x, 0)
tracejit.mark_dynamic(y, 0)
code = explained(x, y).graphs[0].code
check("x.size(0)" in code and "y.size(0)" not in code,
      "duck sizing: y.shape[0] is x.shape[0]'s size node (one symbol in the graph)")


def difference(x, y):
    return x.view(x.shape[0], -1) + torch.ones(x.shape[0] - y.shape[0] + 1, 1)


x, y = torch.randn(5, 2), torch.randn(5, 2)
tracejit.mark_dynamic(x, 0)
tracejit.mark_dynamic(y, 0)
code = tracejit.explain(difference)(x, y).graphs[0].code
check("y.size(0)" not in code, "n - m over duck-sized sizes reads one symbol")


# A size read but never used is no symbol to share: no fact, no recompile.
def unused(x, y):
    B, T = x.shape
    return x.view(B, -1) * 2 + y.sum()


tracejit.reset()
f = tracejit.compile(unused, backend=BACKEND, dynamic=True)
ok = True
for a, b in ((4, 4), (5, 4), (6, 6), (3, 7)):
    x, y = torch.randn(a, b), torch.randn(b, a)
    ok = ok and torch.allclose(f(x, y), unused(x, y), rtol=1e-5, atol=1e-5)
check(ok, "sizes read but unused: match eager")
check_equal(traced(), 1, "sizes read but unused are not shared (equal or not, one trace)")

# 2. A call whose sizes differ fails the equality fact: traced again, once.
tracejit.reset()
f = tracejit.compile(same_rows, backend=BACKEND, dynamic=True)
calls = [(8, 8), (6, 4), (9, 9), (3, 10), (4, 4), (12, 2)]
ok = True
for a, b in calls:
    x, y = torch.randn(a, 3), torch.randn(b, 3)
    ok = ok and torch.allclose(f(x, y), same_rows(x, y))
check(ok, "equal and unequal row counts match eager")
check_equal(traced(), 2, "one more trace when the row counts first differ, none after")
check_equal(tracejit.counters()["recompiles"], 1, "one recompile for unequal row counts")


# 3. Dims of one tensor: a square input's two sizes are one symbol.
def square(x):
    r, c = x.shape
    return x.reshape(r * c) * 2 + torch.arange(r * c)


tracejit.reset()
f = tracejit.compile(square, backend=BACKEND, dynamic=True)
ok = True
for shape in ((6, 6), (3, 3), (6, 7), (4, 4), (2, 9)):
    x = torch.randn(*shape)
    ok = ok and torch.equal(f(x), square(x))
check(ok, "square and non-square inputs match eager")
check_equal(traced(), 2, "a square input is traced once for squares, once more for the first non-square")

# 4. Size 1 is never a symbol, so never shared: broadcasting stays exact.
def broadcast(x, y):
    return x + y * x.shape[0]


tracejit.reset()
f = tracejit.compile(broadcast, backend=BACKEND, dynamic=True)
ok = True
for a, b in ((4, 4), (1, 4), (4, 1), (5, 5)):
    x, y = torch.randn(a, 3), torch.randn(b, 3)
    ok = ok and torch.allclose(f(x, y), broadcast(x, y))
check(ok, "sizes of 1 broadcast as in eager")

# 5. The logs name the shared size's fact and, on a recompile, its failure.
if os.environ.get("TRACEJIT_BUILD_ROOT"):
    launcher = os.path.join(os.environ["TRACEJIT_BUILD_ROOT"], "tracejit")
    program = ("import torch, tracejit\n"
               "def f(x, y):\n    return x.view(x.shape[0], -1).sum(0) + y.view(y.shape[0], -1).sum(0)\n"
               f"c = tracejit.compile(f, backend={BACKEND!r}, dynamic=True)\n"
               "c(torch.ones(8, 3), torch.ones(8, 3)); c(torch.ones(6, 3), torch.ones(4, 3))\n")
    p = subprocess.run([launcher, "--log", "dynamic,recompiles", "-c", program], capture_output=True, text=True,
                       timeout=120)
    check_equal(p.returncode, 0, "--log dynamic,recompiles run exits 0")
    check("the trace relies on SIZE_FACTS L['y'].size(0) == L['x'].size(0)\n" in p.stderr,
          "--log dynamic: the equality of duck-sized sizes is the one fact (not the unused dims 1)")
    check("guard failed: SIZE_FACTS: L['y'].size(0) == L['x'].size(0) no longer holds" in p.stderr,
          "--log recompiles: names the failing equality")
else:
    print("skip  --log checks (TRACEJIT_BUILD_ROOT not set)")

finish()
