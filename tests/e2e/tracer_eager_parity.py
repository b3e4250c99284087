"""Traced tensor ops look exactly like eager's: for each small function the
compiled result (first call and cache hit) has eager's values, dtypes,
shapes, strides, storage offsets, contiguity, autograd node names, `is`
identity with the inputs and sharing of their memory, and the inputs end up
as eager leaves them (values, shapes, strides). Each function must compile
to one graph with no break, so the checks are about the traced ops (issue
18: stride(), in-place metadata ops, indexing and indexed assignment,
reversed operators, wrapped numbers, empty tensors, factory dtypes,
Tensor.real)."""
import warnings

import torch

import tracejit
from e2e_util import check, check_equal, finish

warnings.filterwarnings("ignore")  # out= resizing warns in eager and compiled alike


def describe(obj, inputs):
    """A comparable description of a result: nested containers kept,
    tensors as their visible metadata and values."""
    if isinstance(obj, (tuple, list)):
        return type(obj).__name__, [describe(o, inputs) for o in obj]
    if not isinstance(obj, torch.Tensor):
        return repr(obj)
    same = [i for i, x in enumerate(inputs) if obj is x]
    shares = [i for i, x in enumerate(inputs)
              if obj.numel() and x.numel() and obj.storage().data_ptr() == x.storage().data_ptr()]
    values = obj.detach().tolist()
    return ("tensor", obj.dtype, tuple(obj.shape), obj.stride(), obj.storage_offset(), obj.is_contiguous(),
            type(obj.grad_fn).__name__ if obj.grad_fn is not None else None, obj.requires_grad, same, shares, values)


def describe_inputs(inputs):
    return [(tuple(x.shape), x.stride(), x.dtype, x.detach().tolist()) for x in inputs]


# ---------------------------------------------------------------- cases

def stride_values(x):
    s = x.stride()
    return x.stride()[0] + 1, s, [x + 1, s], x.t().stride()


def unsqueeze_then_shape(a):
    a.unsqueeze_(0)
    return a.shape, a + 1


def t_then_reshape(a):
    a.t_()
    return a.reshape(a.shape[0], -1)


def squeeze_transpose_inplace(a):
    b = a.squeeze_(1)
    a.transpose_(0, 1)
    return a.shape, a.stride(), b is a, a * 2


def set_then_shape(a, b):
    a.set_(b)
    return a.shape, a + 0


def out_resized(a, b, c):
    torch.add(a, b, out=c)
    return c.shape, c * 1


def inplace_is_self(x):
    y = x.add_(1)
    return y is x, y


def ellipsis_is_new_view(b):
    v = b[...]
    return v, v is b, b + 1


def slices_as_eager(c):
    return c[..., :1], c[:], c[:, 0], c[0:2, None]


def rpow_keeps_layout(t):
    return 3 ** t, 2.5 ** t, 2 ** t.int(), torch.pow(2, t)


def rpow_grad(t):
    return 2 ** t


def mul_wrapped_number(x):
    return x * 0.5, x + 2, x - 1.5, x / 2, 2 * x, 2 / x, x.mul(3), torch.add(x, 1, alpha=2)


def setitem_overlapping_source(a):
    a[0] = a[0, :1]
    return a


def setitem_zero_dim_into_view(a):
    v = a.view(1)
    v[:] = a
    return v


def setitem_into_expanded(a, v):
    a[0] = v
    return a


def setitem_leading_unit_dims(x, y):
    x[0] = y
    x[1:, :] = y[None]
    return x


def setitem_mask_zero_dim(a):
    a[a > 0] = 0
    return a


def setitem_numbers(x):
    x[0] = 1
    x[1, 1:] = 2.5
    x[..., 0] = True
    x[None, 2] = 7
    return x


def index_advanced(x, i):
    return x[i], x[0, i], x[:, i], x[i, 1:], x[..., i]


def setitem_advanced(x, i, v):
    x[i] = v[None]
    x[:, i] = 0.25
    return x


def empty_is_contiguous(c):
    return c.is_contiguous(), c[1:].is_contiguous(), torch.zeros(3, 5, 0).is_contiguous()


def factory_dtypes(x):
    v = torch.full((2,), 8)
    w = v.mean() if v.is_floating_point() else v.sum()
    return (torch.full((2,), 8).dtype, torch.full((2,), True).dtype, torch.full((2,), 1.5).dtype,
            torch.arange(3.0).dtype, torch.arange(x.shape[0] * 1.0), torch.arange(1, 3.5), torch.arange(4), w)


def complex_real_imag(z):
    return z.real * 1, z.imag * 1, z.real


def real_of_real(x):
    return x.real is x, x.real + 1


def where_and_layouts(x):
    # Tensor.where binds self to where's second argument; outputs keep the
    # layout eager's kernels give them.
    return x.where(x > 0, x * 2), torch.where(x > 0, x, torch.zeros_like(x)), x.flip(0), x.abs()


CASES = [
    (stride_values, lambda: [torch.ones(2, 3)]),
    (unsqueeze_then_shape, lambda: [torch.arange(6.).view(2, 3)]),
    (t_then_reshape, lambda: [torch.arange(6.).view(2, 3)]),
    (squeeze_transpose_inplace, lambda: [torch.arange(6.).view(2, 1, 3)]),
    (set_then_shape, lambda: [torch.zeros(1), torch.arange(3.)]),
    (out_resized, lambda: [torch.ones(2, 3), torch.ones(2, 3), torch.zeros(1)]),
    (inplace_is_self, lambda: [torch.ones(3)]),
    (ellipsis_is_new_view, lambda: [torch.ones(3)]),
    (slices_as_eager, lambda: [torch.randn(2, 2, 1)[::2].detach().requires_grad_()]),
    (rpow_keeps_layout, lambda: [torch.randn(2, 3).t()]),
    (rpow_grad, lambda: [torch.randn(3, requires_grad=True)]),
    (mul_wrapped_number, lambda: [torch.tensor(3.0, requires_grad=True)]),
    (mul_wrapped_number, lambda: [torch.arange(1, 7).view(2, 3).t()]),
    (setitem_overlapping_source, lambda: [torch.tensor([[1, 2]])]),
    (setitem_zero_dim_into_view, lambda: [torch.tensor(2.0)]),
    (setitem_into_expanded, lambda: [torch.zeros(2, 1, dtype=torch.int64).expand(2, 2), torch.tensor(5)]),
    (setitem_leading_unit_dims, lambda: [torch.zeros(3, 2), torch.ones(1, 2)]),
    (setitem_mask_zero_dim, lambda: [torch.tensor(3.0)]),
    (setitem_mask_zero_dim, lambda: [torch.tensor(-3.0)]),
    (setitem_numbers, lambda: [torch.zeros(3, 4, dtype=torch.int32)]),
    (setitem_numbers, lambda: [torch.zeros(3, 4)]),
    (index_advanced, lambda: [torch.arange(12.).view(3, 4), torch.tensor([2, 0])]),
    (setitem_advanced, lambda: [torch.zeros(3, 3), torch.tensor([2, 0]), torch.ones(1, 3)]),
    (empty_is_contiguous, lambda: [torch.zeros(3, 0)]),
    (empty_is_contiguous, lambda: [torch.zeros(3, 5, 0)]),
    (factory_dtypes, lambda: [torch.ones(2)]),
    (complex_real_imag, lambda: [torch.tensor([1 + 2j, 3 + 4j])]),
    (real_of_real, lambda: [torch.ones(2)]),
    (where_and_layouts, lambda: [torch.randn(4, 6).t()]),
    (where_and_layouts, lambda: [torch.randn(4, 6)[:, ::2]]),
    (where_and_layouts, lambda: [torch.randn(4, 6)[:, :0]]),
    (where_and_layouts, lambda: [(torch.randn(4, 6) * 3).long().t()]),
]


def run(fn, build):
    def make():
        torch.manual_seed(0)
        return build()

    name = f"{fn.__name__}({', '.join(f'{tuple(a.shape)}:{a.dtype}' for a in make())})"
    eager_inputs = make()
    want = describe(fn(*eager_inputs), eager_inputs)
    want_inputs = describe_inputs(eager_inputs)
    tracejit.reset()
    compiled = tracejit.compile(fn, backend="eager")
    for call in ("first call", "cache hit"):
        inputs = make()
        try:
            got = describe(compiled(*inputs), inputs)
        except Exception as e:  # noqa: BLE001 (eager did not raise)
            got = f"raised {type(e).__name__}: {e}"
        check_equal(got, want, f"{name}, {call}: result")
        check_equal(describe_inputs(inputs), want_inputs, f"{name}, {call}: inputs after the call")
    counters = tracejit.counters()
    check(counters["graphs_compiled"] == 1 and counters["graph_breaks"] == 0,
          f"{name}: one graph, no break (counters {dict(counters)})")


def setitem_mask_mismatch(x, m, v):
    x[m, None] = v
    return x


def copy_into_expanded(a):
    a[:] = a
    return a


def raised(fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


def run_raising(fn, make):
    """A function eager raises in: the compiled one raises the same (the
    tracer breaks the graph rather than record an op whose check the meta
    kernel skips)."""
    want = raised(fn, *make())
    check(want is not None, f"{fn.__name__}: eager raises {want}")
    tracejit.reset()
    check_equal(raised(tracejit.compile(fn, backend="eager"), *make()), want, f"{fn.__name__}: compiled raises as eager")


for fn, make in CASES:
    run(fn, make)
run_raising(copy_into_expanded, lambda: [torch.arange(2.).view(2, 1).expand(2, 2)])
run_raising(setitem_mask_mismatch, lambda: [torch.zeros(3, 4, 3), torch.ones(3, 4, 3, dtype=torch.bool), torch.tensor(7.)])
finish()
