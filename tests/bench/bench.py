"""scripts/bench: eager PyTorch against every tracejit backend, in one
process, as ratios; plus the tracer's own costs (trace + compile time,
per-call overhead of a cache hit). Single-threaded, best of several runs.
"""
import statistics
import sys
import time

import torch

import _tracejit
import tracejit

torch.set_num_threads(1)
QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 7
BACKENDS = ["eager", "aot_eager", "llvm"]


def best_time(fn, *args, number):
    for _ in range(number):  # warm up: allocator, caches, first-call costs
        fn(*args)
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        for _ in range(number):
            fn(*args)
        times.append((time.perf_counter() - t0) / number)
    return min(times)


# ----------------------------------------------------------- workloads

def pointwise8(x, y):
    a = x * y + 1.0
    b = a.sin() * x
    c = b - y / 2.0
    d = c.relu() + a
    return d * d - b


def mlp(x, w1, b1, w2, b2):
    h = torch.nn.functional.gelu(x @ w1 + b1)
    return torch.softmax(h @ w2 + b2, dim=-1)


def softmax_ln(x, w, b):
    y = torch.softmax(x, dim=-1)
    return torch.nn.functional.layer_norm(y, (x.shape[-1],), w, b)


def twenty_ops(a, b, c, d):
    x = a + b
    x = x * c
    x = x - d
    x = x.sin()
    x = x + a
    x = x * 2.0
    x = x.cos()
    x = x - b
    x = x.exp()
    x = x * c
    x = x + 1.0
    x = x.tanh()
    x = x - d
    x = x * a
    x = x.relu()
    x = x + b
    x = x.sigmoid()
    x = x * 3.0
    x = x - c
    return x + d


def tiny4(a, b, c, d):
    return a + b + c + d


N = 1 << (16 if QUICK else 20)
workloads = [
    ("pointwise8 (2^%d f32)" % N.bit_length(), pointwise8, lambda: (torch.randn(N), torch.randn(N)), 10),
    ("mlp 64x256x256", mlp, lambda: (torch.randn(64, 256), torch.randn(256, 256), torch.randn(256),
                                     torch.randn(256, 256), torch.randn(256)), 20),
    ("softmax+layer_norm 512x1024", softmax_ln, lambda: (torch.randn(512, 1024), torch.randn(1024), torch.randn(1024)), 10),
    ("tiny4 (8 elements)", tiny4, lambda: tuple(torch.randn(8) for _ in range(4)), 2000),
]

print(f"tracejit bench (torch {torch.__version__}, 1 thread); time per call, ratio = eager / backend (>1 is faster)")
header = f"{'workload':32} {'eager':>10}" + "".join(f" {b:>18}" for b in BACKENDS)
print(header)
print("-" * len(header))
for name, fn, make_args, number in workloads:
    args = make_args()
    eager_t = best_time(fn, *args, number=number)
    row = f"{name:32} {eager_t * 1e6:8.1f}us"
    for backend in BACKENDS:
        tracejit.reset()
        compiled = tracejit.compile(fn, backend=backend)
        compiled(*args)
        t = best_time(compiled, *args, number=number)
        row += f" {t * 1e6:9.1f}us {eager_t / t:5.2f}x"
    print(row)

# ------------------------------------------------------------ tracer costs
print()
print("tracer costs (eager backend)")
args20 = tuple(torch.randn(16) for _ in range(4))
compile_times = []
for _ in range(REPEAT * 3):
    tracejit.reset()
    compiled = tracejit.compile(twenty_ops, backend="eager")
    t0 = time.perf_counter()
    compiled(*args20)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    compiled(*args20)
    warm = time.perf_counter() - t0
    compile_times.append(first - warm)
ops = tracejit.explain(twenty_ops)(*args20).op_count
print(f"  trace + compile, {ops}-op function: {statistics.median(compile_times) * 1e3:.2f} ms (median; goal < 5 ms)")

tracejit.reset()
args4 = tuple(torch.randn(8) for _ in range(4))
compiled = tracejit.compile(tiny4, backend="eager")
compiled(*args4)
(code,) = _tracejit._cache_entries(tiny4)
graph_fn = next(c for c in code.co_consts if type(c).__name__ == "CompiledGraph")
number = 20000 if not QUICK else 2000
t_call = best_time(compiled, *args4, number=number)
t_graph = best_time(graph_fn, *args4, number=number)
print(f"  cache hit, 4 tensor inputs: {t_call * 1e6:.2f} us per call, graph alone {t_graph * 1e6:.2f} us, "
      f"overhead {(t_call - t_graph) * 1e6:.2f} us (goal < 3 us)")

# ------------------------------------------------ module compile time
class Layer(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = torch.nn.Linear(d, d)
        self.act = torch.nn.GELU()

    def forward(self, x):
        return self.act(self.lin(x)) + x


class Stack(torch.nn.Module):
    def __init__(self, depth, d):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Layer(d) for _ in range(depth)])
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.norm(x)


mlp24 = Stack(24, 32).eval()
xin = torch.randn(4, 32)
times = []
for _ in range(REPEAT):
    tracejit.reset()
    compiled = tracejit.compile(mlp24, backend="eager")
    t0 = time.perf_counter()
    compiled(xin)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    compiled(xin)
    times.append(first - (time.perf_counter() - t0))
ex = tracejit.explain(mlp24)(xin)
print(f"  trace + compile, 24-layer MLP of nested modules ({ex.graph_count} graph, {ex.op_count} ops): "
      f"{statistics.median(times) * 1e3:.2f} ms (median; goal < 50 ms)")

# ------------------------------------------------------------------ AOT
print()
print("AOT (aot_eager: functionalization, joint graph + partition with grad)")


def fifty_ops(x, w):
    for _ in range(10):
        x = (x @ w).sin() * 0.5 + x.tanh() - 0.1
    return x.sum()


def first_call_ms(fn, backend, *args):
    times = []
    for _ in range(REPEAT):
        tracejit.reset()
        compiled = tracejit.compile(fn, backend=backend)
        t0 = time.perf_counter()
        compiled(*args)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        compiled(*args)
        times.append(first - (time.perf_counter() - t0))
    return statistics.median(times) * 1e3


xa = torch.randn(8, 16, requires_grad=True)
wa = torch.randn(16, 16, requires_grad=True)
nodes = tracejit.explain(fifty_ops)(xa, wa).op_count
aot_ms = first_call_ms(fifty_ops, "aot_eager", xa, wa) - first_call_ms(fifty_ops, "eager", xa, wa)
print(f"  AOT's share of the compile of a {nodes}-node forward graph with grad: {aot_ms:.2f} ms (goal < 5 ms)")

tracejit.reset()
tiny_eager = tracejit.compile(tiny4, backend="eager")
tiny_aot = tracejit.compile(tiny4, backend="aot_eager")
tiny_eager(*args4)
tiny_aot(*args4)
t_e = best_time(tiny_eager, *args4, number=number)
t_a = best_time(tiny_aot, *args4, number=number)
print(f"  runtime wrapper, 4 inputs: aot_eager {t_a * 1e6:.2f} us vs the same graph unwrapped (eager) "
      f"{t_e * 1e6:.2f} us: +{(t_a - t_e) * 1e6:.2f} us per call (goal < 2 us)")


def train_step_time(model, step_fn, x, target):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(step_fn(x), target).backward()
        opt.step()
    return best_time(step, number=5 if QUICK else 20)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = torch.nn.Linear(256, 512), torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)

    def forward(self, x):
        return self.l3(torch.nn.functional.gelu(self.l2(torch.nn.functional.gelu(self.l1(x)))))


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16)
        self.c2, self.b2 = torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32)
        self.fc = torch.nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(self.b1(self.c1(x)).relu(), 2)
        x = torch.nn.functional.max_pool2d(self.b2(self.c2(x)).relu(), 2)
        return self.fc(x.flatten(1))


for label, make, xshape in (("MLP 256-512-512-10, batch 64", MLP, (64, 256)), ("CNN conv/bn x2, 32x32, batch 16", CNN, (16, 3, 32, 32))):
    torch.manual_seed(0)
    model = make()
    x = torch.randn(*xshape)
    target = torch.randint(0, 10, (xshape[0],))
    eager_t = train_step_time(model, model, x, target)
    tracejit.reset()
    aot_t = train_step_time(model, tracejit.compile(model, backend="aot_eager"), x, target)
    summary = _tracejit._last_aot_summary()
    saved = next((line.strip() for line in summary.splitlines() if line.startswith("partition:")), "no partition")
    print(f"  training step, {label}: eager {eager_t * 1e3:.2f} ms, aot_eager {aot_t * 1e3:.2f} ms "
          f"({eager_t / aot_t:.2f}x; goal >= 1.0x for the MLP); {saved}")
