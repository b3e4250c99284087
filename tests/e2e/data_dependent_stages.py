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




# Over 6 sizes (counts >= 2, as the acceptance patterns): the first
# call's stages (static) capture once each; the dynamic entry traced at the
# second size cuts the same stages, which it shares with the first entry
# (unbacked_stages.cpp), so its sizes and counts compile from AOT size
# templates made from those captures and probes at sizes of our choosing
# (runtime/size_probes.h), the probes counted apart. (Before the shared
# stages: 4 captures; before the probes: 8.)
def masked_exp(x):
    return (x * 2)[x > 0].exp() + 1


def nonzero_rows(x):  # nonzero's result is transposed: probed in that layout
    return (torch.nonzero(x > 0) * 2).sum(0) + 1


def masked_select_sin(x):
    return torch.masked_select(x * 3, x > 0).sin() - 1


def unique_counts(x):
    v, counts = torch.unique((x * 4).round(), sorted=True, return_counts=True)
    return v * 2, counts.float() / 2


def repeat_by_tensor(x):
    reps = (x[:, 0] > 0).long() + 1
    return torch.repeat_interleave(x * 2, reps, dim=0) + 1


def where_cond(x):
    rows, cols = torch.where(x > 0)
    return x[rows, cols] * 2 + 1, rows + cols


def with_count(n):
    x = -torch.rand(n, 4) - 1
    x.view(-1)[torch.randperm(4 * n)[:n + 1]] = torch.rand(n + 1) + 1
    return x


def over_six_sizes(fn, args_of, what):
    """fn compiled over 6 sizes (args_of(n)): eager's values, at most two
    compiles, no break, each stage captured once."""
    tracejit.reset()
    cf = tracejit.compile(fn, backend=BACKEND)
    ok = True
    for n in (3, 5, 6, 7, 9, 12):
        args = args_of(n)
        ok = ok and same(cf(*args), fn(*args))
    c = counters()
    check(ok, f"{what}: 6 sizes equal eager")
    check(c["graphs_compiled"] <= 2, f"{what}: compiled at most twice ({c['graphs_compiled']})")
    check_equal(c["graph_breaks"], 0, f"{what}: no graph break")
    if COMPILING:
        check(c["aot_captures"] <= 2, f"{what}: 6 sizes captured at most 2 times: each stage once, the dynamic "
              f"entry sharing the first one's stages ({c['aot_captures']}, {c['aot_size_probes']} probes)")
        check(c["aot_size_probes"] >= 3, f"{what}: the templates came from probes ({c['aot_size_probes']})")
        check_equal(c["sizes_run_op_by_op"], 0, f"{what}: nothing runs op by op")


# where(cond)'s rows and cols are views of one nonzero result (cols at
# offset count): its tail is probed with views of one fresh tensor, the
# offset extrapolated from the count (runtime/size_probes.h; it captured 4
# times when probes refused inputs sharing memory).
for fn in (masked_exp, nonzero_rows, masked_select_sin, unique_counts, repeat_by_tensor, where_cond):
    over_six_sizes(fn, lambda n: (with_count(n),), fn.__name__)

# x[:t] over 6 sizes, t read from the data: a value that stays put while
# the input size changes (probed at v, v + 1, v + 2), and one that moves
# with the input size (probed a step behind it), make the template of the
# stage after the read over the values from its capture and probes
# (runtime/size_probes.h; it captured 6 to 7 times before).
tracejit.config.capture_scalar_outputs = True
for values in ((2, 2, 4, 5, 3, 7), (3, 5, 6, 7, 9, 12), (9, 2, 15, 4, 4, 20)):
    for fn in (slice_by_item, slice_by_tensor):
        value_of = dict(zip((3, 5, 6, 7, 9, 12), values))
        over_six_sizes(fn, lambda n: (torch.randn(n + 2, 3), torch.tensor([value_of[n], 3])),
                       f"{fn.__name__}, values {values}")

for fn in (slice_by_item, slice_by_tensor):
    tracejit.reset()
    cf = tracejit.compile(fn, backend=BACKEND)
    values = [5, 0, 7, 1, 9, 3, 12, 4, 6, 2, 15, 20, 25, 30, 8, 11, 13, 14, 16, 17]
    run_batches(cf, fn, [(torch.randn(40, 3), torch.tensor([v, 3])) for v in values],
                f"{fn.__name__}: 20 values read as sizes")
tracejit.config.capture_scalar_outputs = False

finish()
