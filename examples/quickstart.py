"""A first tracejit program: compile a function and a module, compare with
eager PyTorch, and look at the counters."""
import torch

import tracejit


@tracejit.compile(backend="eager")
def gelu_mlp(x, w1, w2):
    h = torch.nn.functional.gelu(x @ w1)
    return h @ w2 + x.sum(dim=-1, keepdim=True)


x, w1, w2 = torch.randn(8, 16), torch.randn(16, 32), torch.randn(32, 16)
eager = torch.nn.functional.gelu(x @ w1) @ w2 + x.sum(dim=-1, keepdim=True)
compiled = gelu_mlp(x, w1, w2)
print("function matches eager:", torch.allclose(compiled, eager, atol=1e-5))

model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()
fast = tracejit.compile(model, backend="eager")
print("module matches eager:", torch.allclose(fast(x), model(x), atol=1e-5))
print("counters:", tracejit.counters())


def with_a_break(x):
    y = x.sin() * 2
    print("  (a print inside the function: a graph break)")
    return y.cos()


print(tracejit.explain(with_a_break)(torch.randn(4)))
