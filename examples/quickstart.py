"""A first tracejit program: compile a function and a module with the
default backend, check them against eager PyTorch, see what fusion buys on
a chain of pointwise ops (and what the first call's compile costs), and
read explain's account of a graph break."""
import time

import torch

import tracejit


def gelu_mlp(x, w1, w2):
    h = torch.nn.functional.gelu(x @ w1)
    return h @ w2 + x.sum(dim=-1, keepdim=True)


x, w1, w2 = torch.randn(8, 16), torch.randn(16, 32), torch.randn(32, 16)
compiled_mlp = tracejit.compile(gelu_mlp)  # the default backend: llvm (fused LLVM kernels)
print("function matches eager:", torch.allclose(compiled_mlp(x, w1, w2), gelu_mlp(x, w1, w2), atol=1e-5))

model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()
fast = tracejit.compile(model)
print("module matches eager:", torch.allclose(fast(x), model(x), atol=1e-5))


# Where fusion pays: eight pointwise ops over a million elements are eight
# passes over memory in eager and one fused loop compiled.
def activation_chain(t):
    return ((t * 1.5 + 0.5).sigmoid() * t.tanh() - t.exp() * 0.01).relu() + 1.0


def best_ms(fn, arg, repeats=20):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


big = torch.randn(1 << 20)
chain = tracejit.compile(activation_chain)
start = time.perf_counter()
first = chain(big)
first_call_ms = (time.perf_counter() - start) * 1e3
print("chain matches eager:", torch.allclose(first, activation_chain(big), atol=1e-5))
eager_ms, compiled_ms = best_ms(activation_chain, big), best_ms(chain, big)
print(f"chain over 1M floats: eager {eager_ms:.2f} ms, compiled {compiled_ms:.2f} ms "
      f"({eager_ms / compiled_ms:.1f}x); first call (trace + compile) {first_call_ms:.0f} ms")
print("counters:", {k: v for k, v in tracejit.counters().items() if v})


def with_a_break(t):
    y = t.sin() * 2
    print("  (a print inside the function: a graph break)")
    return y.cos()


print(tracejit.explain(with_a_break)(torch.randn(4)))
