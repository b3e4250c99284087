"""Issue 42 (the compile_all_listcomp trial): under --compile-all, a list
comprehension whose caller is not traced (module level) is its own
`<listcomp>` frame; it receives the iterator its caller made (`.0`). A
range, list or tuple iterator there is read through its __reduce__ (and
guarded there), so the loop unrolls into one graph instead of one graph
break per element (52 breaks and 15-40x python's time before). Checks the
values, the graph and break counts (the time of a first traced
200-element comprehension against python's own is printed, never
asserted: a loaded or sanitized machine would fail it); on llvm, that its 200 independent muls become narrow kernels that print alike
and compile once (lowering's fusion width), not one kernel of 400 buffers
(7 s of LLVM)."""
import time

import torch

import tracejit
from e2e_util import BACKEND, check, finish

t0 = time.perf_counter()
xs = [torch.full((4,), float(i)) * 2 for i in range(200)]
t1 = time.perf_counter()
ys = [torch.full((4,), float(i)) * 2 for i in range(200)]
t2 = time.perf_counter()
c = tracejit.counters()
want = torch.stack([torch.full((4,), float(i)) * 2 for i in range(200)])
check(torch.equal(torch.stack(xs), want) and torch.equal(torch.stack(ys), want), "200-element listcomps: eager's values")
check(c["graph_breaks"] == 0, f"no graph break per element ({c['graph_breaks']} breaks)")
check(c["graphs_compiled"] == 2, f"one graph per comprehension ({c['graphs_compiled']} graphs)")

# A list and a tuple iterated by comprehensions; the same comprehension again (a cache hit).
base = [torch.randn(3) for _ in range(50)]
tracejit.reset()
for rep in range(3):
    zs = [t * 2 + 1 for t in base]
    ws = [t.sum() for t in tuple(base)]
c = tracejit.counters()
check(c["graph_breaks"] == 0 and c["graphs_compiled"] == 2, f"listcomps over a list and a tuple: one graph each ({c})")
check(all(torch.equal(z, t * 2 + 1) for z, t in zip(zs, base)), "listcomp over a list: eager's values")
check(all(torch.equal(w, t.sum()) for w, t in zip(ws, base)), "listcomp over a tuple: eager's values")
base.append(torch.ones(3))  # another length: a new trace, right values
zs = [t * 2 + 1 for t in base]
check(len(zs) == 51 and torch.equal(zs[-1], torch.full((3,), 3.0)), "listcomp over a longer list: eager's values")


# Python's own time for the same comprehension (a disabled function runs plain).
@tracejit.disable
def plain():
    s = time.perf_counter()
    out = [torch.full((4,), float(i)) * 2 for i in range(200)]
    return out, time.perf_counter() - s


python_ms = min(1e3 * plain()[1] for _ in range(5))
k0 = tracejit.counters()
t3 = time.perf_counter()
vs = [torch.full((4,), float(i)) * 3 for i in range(200)]  # a new comprehension: traced and compiled
t4 = time.perf_counter()
first_ms = 1e3 * (t4 - t3)
print(f"python {python_ms:.1f} ms; first (traced) listcomp {first_ms:.1f} ms; "
      f"the trial's two: {1e3 * (t1 - t0):.1f} ms, {1e3 * (t2 - t1):.1f} ms on {BACKEND}")
check(torch.equal(torch.stack(vs), want * 1.5), "a third listcomp: eager's values")
k1 = tracejit.counters()
compiled, hits = (k1["kernels_compiled"] - k0["kernels_compiled"], k1["kernel_cache_hits"] - k0["kernel_cache_hits"])
if BACKEND == "llvm":  # independent work cut into narrow kernels that print alike (one kernel of 400 buffers: 7 s)
    check(compiled <= 2 and compiled + hits >= 20,
          f"llvm: the 200 muls are narrow kernels compiled once each shape ({compiled} compiled, {hits} cache hits)")
finish()
