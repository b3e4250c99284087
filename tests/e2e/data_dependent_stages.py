"""Issue 43, the stages of a graph with data-dependent sizes over many
sizes and values: AOT stops capturing once each stage has its AOT size
template.
- A graph that also uses an input's size as an int (`x.view(x.shape[0] * 2,
  -1)`, `y.new_zeros(x.shape[0])`) beside a data-dependent op keeps that
  size node in the stages that use it, so its stages serve every input size:
  new input sizes (with new counts) capture nothing once the templates exist.
- A stage that reads a 0-d tensor's value as a size (`x[:t]`, `.item()`
  under capture_scalar_outputs) reads it as the size of an extra input
  with no elements, so its captures make a template over the values too:
  new values capture nothing more.
Values equal eager's throughout (counts and values 0 and 1 among them, on
their own compiles)."""
import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

torch.manual_seed(0)
EXACT = BACKEND in ("eager", "aot_eager")
COMPILING = BACKEND != "eager"


def counters():
    return tracejit.counters()


def same(a, b):
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if not (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape):
        return False
    if EXACT or not a.is_floating_point():
        return torch.equal(a, b)
    return torch.allclose(a, b, rtol=1e-5, atol=1e-6)


def input_size_beside_mask(x):
    flat = x.view(x.shape[0] * 2, -1)
    y = (flat + 1)[flat > 0]
    return y.exp() * 2, y.new_zeros(x.shape[0]) + y.sum(), flat.sum(0)


def with_positive(n, k):
    x = -torch.rand(n, 2, 2) - 1
    x.view(-1, 2)[torch.randperm(2 * n)[:k]] = torch.rand(k, 2) + 1
    return x


def run_batches(cf, fn, inputs, what):
    ok, after_first = True, None
    for i, args in enumerate(inputs):
        if i == len(inputs) // 2:
            after_first = counters()["aot_captures"]
        if not same(cf(*args), fn(*args)):
            ok = False
            print(f"  {what}: differs for input {i}")
    check(ok, f"{what}: values equal eager")
    check(counters()["graphs_compiled"] <= 2, f"{what}: compiled at most twice ({counters()['graphs_compiled']})")
    check_equal(counters()["graph_breaks"], 0, f"{what}: no graph break")
    if COMPILING:
        check_equal(counters()["aot_captures"], after_first,
                    f"{what}: the second half captures nothing more ({after_first} captures for the first half)")
        check_equal(counters()["sizes_run_op_by_op"], 0, f"{what}: nothing runs op by op")


tracejit.reset()
cf = tracejit.compile(input_size_beside_mask, backend=BACKEND)
run_batches(cf, input_size_beside_mask, [(with_positive(10 + i, i),) for i in range(30)],
            "an input size as an int beside x[mask], input sizes 10..39")


def slice_by_item(x, t):
    n = t[0].item()
    return (x + 1)[:n] * 2, torch.ones(n, 3) * x.mean()


def slice_by_tensor(x, t):
    y = (x * 2)[:t[0]]
    return y + 1, y.sum(0)


tracejit.config.capture_scalar_outputs = True
for fn in (slice_by_item, slice_by_tensor):
    tracejit.reset()
    cf = tracejit.compile(fn, backend=BACKEND)
    values = [5, 0, 7, 1, 9, 3, 12, 4, 6, 2, 15, 20, 25, 30, 8, 11, 13, 14, 16, 17]
    run_batches(cf, fn, [(torch.randn(40, 3), torch.tensor([v, 3])) for v in values],
                f"{fn.__name__}: 20 values read as sizes")
tracejit.config.capture_scalar_outputs = False

finish()
