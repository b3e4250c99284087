"""Small functions for the tracer's golden tests (test_tracer_golden.py).

Each case is a plain function registered with @case(builder, ...): the
builder returns a fresh tuple of positional arguments (seeded, so every call
gives the same values), the function is traced with those arguments, and
its graph and guards are pinned in golden_tracer/<name>.txt.

Cases registered with unsupported="substring" must be reported as a graph
break whose reason contains the substring; the line that breaks carries the
marker comment `# BREAK` so the test can check the reported line number.

compare="shape" compares only the structure, shapes and dtypes of the
results (for random ops such as dropout in training mode).
"""
import collections
import copy

import torch
import torch.nn.functional as F
import torch.utils._pytree as _pytree

import tracejit

Case = collections.namedtuple("Case", "name fn make_args unsupported compare graphs")
CASES = []


def case(make_args, *, unsupported=None, compare="value", graphs=1):
    def register(fn):
        CASES.append(Case(fn.__name__, fn, make_args, unsupported, compare, graphs))
        return fn

    return register


def randn(*shapes, seed=0):
    """Builder: one float tensor per shape, drawn after manual_seed(seed)."""

    def build():
        torch.manual_seed(seed)
        return tuple(torch.randn(*s) for s in shapes)

    return build


def args(fn, seed=0):
    """Builder: fn() after manual_seed(seed); fn returns the argument tuple."""

    def build():
        torch.manual_seed(seed)
        return fn()

    return build


X = randn((3, 4))
XY = randn((3, 4), (3, 4))
X4 = randn((2, 3, 4, 5))

# Module-level state read by the global cases.
torch.manual_seed(1234)
GLOBAL_WEIGHT = torch.randn(4)
GLOBAL_SCALE = 3
GLOBAL_NAMES = ("a", "b")

# ---------------------------------------------------------------------------
# Binary operators on tensors, on constants, in-place, reversed.


@case(XY)
def binop_add(x, y):
    return x + y


@case(XY)
def binop_sub(x, y):
    return x - y


@case(XY)
def binop_mul(x, y):
    return x * y


@case(XY)
def binop_truediv(x, y):
    return x / y


@case(XY)
def binop_floordiv(x, y):
    return x // (y.abs() + 1)


@case(XY)
def binop_mod(x, y):
    return x % (y.abs() + 1)


@case(XY)
def binop_pow(x, y):
    return x.abs() ** y


@case(randn((3, 4), (4, 5)))
def binop_matmul(x, y):
    return x @ y


@case(args(lambda: (torch.randint(0, 16, (3, 4)), torch.randint(0, 16, (3, 4)))))
def binop_bitwise(a, b):
    return a & b, a | b, a ^ b


@case(X)
def binop_tensor_scalar(x):
    return x + 1, x - 2.5, x * 3, x / 4, x // 2, x % 3, x ** 2


@case(X)
def binop_reversed(x):
    return 2 - x, 1 / x, 2 ** x, 3 + x, 4 * x


@case(X)
def binop_reversed_floordiv_mod(x):
    return 7 // (x.abs() + 1), 7 % (x.abs() + 1)


@case(args(lambda: ()), graphs=0)
def binop_constants():
    a = 7
    b = 2
    return a + b, a - b, a * b, a / b, a // b, a % b, a ** b, a & b, a | b, a ^ b, a << b, a >> b


@case(X)
def binop_constants_fold_into_tensor(x):
    k = 2 * 3 + 1
    return x * k - (k // 2)


@case(XY)
def inplace_add_sub_mul(x, y):
    x += 1
    x -= y
    x *= 2
    return x


@case(XY)
def inplace_div_pow(x, y):
    x /= 2
    x **= 2
    return x


@case(args(lambda: (torch.randint(0, 16, (3, 4)),)))
def inplace_bitwise(a):
    a &= 7
    a |= 8
    a ^= 1
    return a


@case(X)
def inplace_on_local_copy(x):
    y = x.clone()
    y += 1
    y *= y
    return y


@case(X)
def inplace_rebinding_constant(x):
    n = 1
    n += 2
    n *= 3
    return x + n


# ---------------------------------------------------------------------------
# Comparisons and unary operators.


@case(XY)
def compare_tensors(x, y):
    return x < y, x <= y, x > y, x >= y, x == y, x != y


@case(X)
def compare_tensor_scalar(x):
    return x > 0, 0.5 <= x, x == 1


@case(X)
def compare_constants(x):
    n = 3
    if n < 4 and n != 2 and not n > 5:
        return x + 1
    return x - 1


@case(X)
def unary_ops(x):
    return -x, +x, abs(x)


@case(args(lambda: (torch.randn(3, 4) > 0,)))
def unary_invert_bool(m):
    return ~m


@case(X)
def unary_not_constant(x):
    flag = False
    if not flag:
        return x * 2
    return x


# ---------------------------------------------------------------------------
# Shape, size, dim, dtype, numel in ifs.


@case(X)
def shape_if(x):
    if x.shape[0] > 2:
        return x.relu()
    return x.sigmoid()


@case(X)
def size_dim_if(x):
    if x.size(1) == 4 and x.size(-1) == 4:
        x = x * 2
    if x.dim() == 2:
        x = x + 1
    return x


@case(X)
def dtype_if(x):
    if x.dtype == torch.float32:
        return x.double()
    return x


@case(X)
def numel_if(x):
    if x.numel() > 10:
        return x.sum()
    return x.mean()


@case(X4)
def shape_unpack(x):
    b, c, h, w = x.shape
    return x.reshape(b, c * h * w), b * c


@case(X)
def shape_arith(x):
    n = x.shape[0] * x.shape[1]
    return x.view(n), n


@case(X)
def ndim_device_requires_grad(x):
    if x.ndim == 2 and x.device.type == "cpu" and not x.requires_grad:
        return x + 1
    return x


@case(X)
def is_floating_point_if(x):
    if x.is_floating_point() and x.is_contiguous():
        return x * 0.5
    return x


# ---------------------------------------------------------------------------
# Loops and Python containers.


@case(X)
def loop_range(x):
    for i in range(3):
        x = x + i
    return x


@case(X)
def loop_range_step(x):
    acc = x
    for i in range(10, 0, -3):
        acc = acc * 0.5 + i
    return acc


@case(XY)
def loop_tuple(x, y):
    out = x
    for t in (x, y, x):
        out = out + t
    return out


@case(X)
def loop_list_append(x):
    parts = []
    for k in [1, 2, 3]:
        parts.append(x * k)
    return torch.cat(parts, 0)


@case(X)
def loop_dict_items(x):
    scales = {"a": 1.0, "b": 2.0}
    out = {}
    for k, v in scales.items():
        out[k] = x * v
    return out


@case(XY)
def loop_zip(x, y):
    total = 0
    for a, b in zip([x, y], [2, 3]):
        total = total + a * b
    return total


@case(X)
def loop_enumerate(x):
    outs = []
    for i, t in enumerate(x.unbind(0)):
        outs.append(t * i)
    return torch.stack(outs)


@case(X)
def loop_break_continue(x):
    for i in range(10):
        if i % 2 == 0:
            continue
        if i > 5:
            break
        x = x + i
    return x


@case(X)
def loop_over_tensor(x):
    total = x[0] * 0
    for row in x:
        total = total + row
    return total


@case(X)
def loop_nested(x):
    for i in range(2):
        for j in range(2):
            x = x + i * j
    return x


@case(X)
def while_constant(x):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    return x


@case(XY)
def tuple_build_unpack(x, y):
    t = (x, y, 1)
    a, b, c = t
    return a * c + b


@case(X)
def star_unpack(x):
    a, *rest = [x, x + 1, x + 2]
    first, *middle, last = (1, 2, 3, 4)
    return a, rest, middle, first + last


@case(X)
def list_ops(x):
    items = [x, x * 2]
    items.extend([x * 3])
    items.insert(0, x - 1)
    last = items.pop()
    return items[1:], last, len(items)


@case(X)
def dict_build(x):
    d = {"x": x, "n": 2}
    d["y"] = x + d["n"]
    d["z"] = 3
    return d, list(d.keys()), "y" in d


@case(X)
def dict_get_items(x):
    d = {"a": x, "b": 1}
    keys = list(d)
    return d.get("a") * d["b"], d.get("missing", 7), list(d.values())[1], keys


@case(X)
def tuple_index_slice(x):
    t = (x, 1, 2.5, "s")
    c = t[1:]
    return t[0] * t[1], t[-2], t[1:3], c.index(2.5), c.count(1)


@case(X)
def fstring_constant(x):
    n = x.shape[0]
    name = f"layer_{n}_{2.5:.1f}"
    return {name: x * 2}


@case(X)
def string_constant_ops(x):
    s = "a,b,c".split(",")
    key = "-".join(s).upper()
    return x + len(s), key


@case(X)
def in_and_not_in(x):
    if 3 in (1, 2, 3) and "q" not in ["a"]:
        return x * 3
    return x


@case(X)
def conditional_expression(x):
    k = 2 if x.shape[0] == 3 else 5
    return x * k


# ---------------------------------------------------------------------------
# Indexing, slicing and item assignment on tensors.


@case(X4)
def index_ints(x):
    return x[0], x[1, 2], x[-1, -1, -1]


@case(X4)
def index_slices(x):
    return x[:, 1:3], x[..., ::2], x[0, :, 1:-1]


@case(X4)
def index_none_ellipsis(x):
    return x[None], x[..., None], x[:, None, 0], x[..., 0]


@case(args(lambda: (torch.randn(5, 3), torch.tensor([0, 2, 4]))))
def index_tensor(x, idx):
    return x[idx], x[:, 0][idx]


@case(X)
def setitem_int(x):
    x[0] = 1
    return x


@case(randn((3, 4), (3,)))
def setitem_slice_tensor(x, y):
    x[:, 1] = y
    return x


@case(X)
def setitem_mask(x):
    x[x < 0] = 0
    return x


@case(X)
def index_alias_and_skipped_slices(x):
    # x[...] and x[()] are new views (aten.alias); inside a tuple a slice
    # [0:size:1] is skipped as eager skips it, a bare `:` is not.
    return x[...], x[()], x[:, :4], x[0:3, 1]


@case(randn((3, 4), (1, 4)))
def setitem_copy_to(x, y):
    x[0] = y  # leading 1s dropped: view, then copy_
    x[1:] = y  # view, expand, copy_
    x[2, 0] = y[0, 0]  # same sizes: copy_
    x[:, 1] = y[0, 1]  # a 0-d value: fill_
    return x


@case(X)
def inplace_metadata_shape(x):
    y = x.clone()
    y.t_()
    z = y.unsqueeze_(0)
    return y.reshape(y.shape[1], -1), y.shape, y.stride(), z is y


@case(X)
def setitem_on_clone(x):
    y = x.clone()
    y[1:, :2] = 0.5
    return y


# ---------------------------------------------------------------------------
# Tensor methods.


@case(X4)
def method_view_reshape(x):
    return x.view(2, 60), x.reshape(-1, 5), x.view((6, 20)), x.reshape([4, 30]), x.flatten(1)


@case(X4)
def method_permute_transpose(x):
    return x.permute(0, 2, 1, 3), x.transpose(1, 2), x.permute([3, 2, 1, 0]).contiguous(), x.mT


@case(X4)
def method_reductions(x):
    return x.sum(1), x.sum(dim=2, keepdim=True), x.mean(), x.mean(-1), x.sum()


@case(X)
def method_max_dim_tuple(x):
    values, indices = x.max(1)
    m = x.max(dim=0)
    return values, indices, m[0], m[1], x.max()


@case(X)
def method_min_argmax(x):
    return x.min(0)[0], x.argmax(1), x.argmin()


@case(X)
def method_softmax(x):
    return x.softmax(-1), x.log_softmax(dim=0)


@case(randn((4, 6)))
def method_chunk_split(x):
    a, b = x.chunk(2, dim=1)
    parts = x.split(2)
    sized = x.split([1, 3], dim=0)
    return a + b, parts, sized


@case(args(lambda: (torch.randint(0, 5, (3, 4)),)))
def method_float_to(x):
    return x.float(), x.to(torch.float64), x.to(dtype=torch.float16), x.long(), x.bool()


@case(X)
def method_unsqueeze_expand(x):
    y = x.unsqueeze(0)
    return y.expand(2, 3, 4), x.unsqueeze(-1).expand(-1, -1, 2), y.squeeze(0)


@case(X)
def method_repeat_flip(x):
    return x.repeat(2, 1), x.flip(0), x.t()


@case(X)
def method_clamp_where(x):
    return x.clamp(-0.5, 0.5), x.clamp(min=0), torch.where(x > 0, x, x * 0.1)


@case(X)
def method_masked_fill(x):
    return x.masked_fill(x < 0, 0.0)


@case(X)
def method_elementwise(x):
    return x.exp(), x.abs().log(), x.abs().sqrt(), x.tanh(), x.sigmoid(), x.neg()


@case(XY)
def method_arith(x, y):
    return x.add(y), x.add(y, alpha=2), x.mul(3), x.sub(y), x.div(2), x.pow(2)


@case(X)
def method_inplace(x):
    y = x.clone()
    y.add_(1)
    y.mul_(2)
    y.clamp_(max=3)
    return y


@case(randn((3, 4), (4, 5)))
def method_matmul_mm(x, w):
    return x.matmul(w), x.mm(w), torch.matmul(x, w)


@case(X)
def method_new_tensors(x):
    return x.new_zeros(2, 3), x.new_ones((3,)), torch.zeros_like(x), torch.ones_like(x)


@case(X)
def method_type_as(x):
    i = x.long()
    return i.type_as(x)


@case(X)
def method_norms(x):
    return x.norm(), x.var(1), x.std(0), x.prod(1)


@case(X)
def method_cumsum_sort(x):
    return x.cumsum(0), x.sort(1)[0], x.topk(2, dim=1)[0]


# ---------------------------------------------------------------------------
# torch functions.


@case(XY)
def torch_cat_stack(x, y):
    return torch.cat([x, y]), torch.cat((x, y), dim=1), torch.stack([x, y], 0), torch.stack((x, y), dim=-1)


@case(XY)
def torch_pointwise(x, y):
    return torch.add(x, y), torch.mul(x, 2), torch.exp(x), torch.maximum(x, y), torch.relu(x)


@case(X)
def torch_reductions(x):
    return torch.sum(x, dim=1), torch.mean(x, 0, keepdim=True), torch.max(x, 1)[1], torch.amax(x, dim=0)


@case(X)
def torch_kwargs(x):
    return torch.sum(x, dim=1, keepdim=True), torch.clamp(x, min=-1.0, max=1.0), torch.softmax(x, dim=-1)


@case(X)
def torch_factories(x):
    z = torch.zeros(3, 4)
    o = torch.ones(2, dtype=torch.float64)
    a = torch.arange(4)
    f = torch.full((3, 4), 2.0)
    return x + z + f, o, a


@case(X)
def torch_transpose_flatten(x):
    return torch.transpose(x, 0, 1), torch.flatten(x), torch.unsqueeze(x, 1), torch.squeeze(x[None])


@case(X)
def torch_where_scalar(x):
    return torch.where(x > 0, x, torch.zeros_like(x))


@case(randn((2, 3, 4), (2, 4, 5)))
def torch_bmm_baddbmm(a, b):
    return torch.bmm(a, b), torch.baddbmm(torch.zeros(2, 3, 5), a, b, alpha=0.5)


@case(X)
def torch_numel_if(x):
    if torch.numel(x) == 12:
        return x + 1
    return x


# ---------------------------------------------------------------------------
# torch.nn.functional.


@case(X)
def functional_activations(x):
    return F.relu(x), F.gelu(x), F.silu(x), F.leaky_relu(x, 0.2), F.hardswish(x), F.elu(x)


@case(X)
def functional_softmax(x):
    return F.softmax(x, dim=-1), F.log_softmax(x, dim=1)


@case(randn((3, 4), (5, 4), (5,)))
def functional_linear(x, w, b):
    return F.linear(x, w, b), F.linear(x, w)


@case(X, graphs=0)  # dropout in eval mode is the identity: no tensor work
def functional_dropout_eval(x):
    return F.dropout(x, p=0.5, training=False)


@case(X, compare="shape")
def functional_dropout_train(x):
    return F.dropout(x, p=0.5, training=True)


@case(randn((2, 3, 4), (4,), (4,)))
def functional_layer_norm(x, w, b):
    return F.layer_norm(x, (4,), w, b), F.layer_norm(x, [4], eps=1e-3)


@case(randn((1, 2, 5, 5), (3, 2, 3, 3), (3,)))
def functional_conv2d(x, w, b):
    return F.conv2d(x, w, b), F.conv2d(x, w, padding=1, stride=2)


@case(args(lambda: (torch.randn(4, 5), torch.tensor([0, 4, 2, 1]))))
def functional_cross_entropy(logits, target):
    return F.cross_entropy(logits, target), F.cross_entropy(logits, target, reduction="sum")


@case(XY)
def functional_mse_loss(x, y):
    return F.mse_loss(x, y), F.mse_loss(x, y, reduction="none")


@case(randn((1, 2, 6, 6)))
def functional_pooling(x):
    return F.max_pool2d(x, 2), F.adaptive_avg_pool2d(x, (1, 1))


# ---------------------------------------------------------------------------
# Builtins on constants and values known at trace time.


@case(X)
def builtin_len(x):
    return x * len(x), len([1, 2]), len({"a": 1})


@case(X)
def builtin_isinstance(x):
    if isinstance(x, torch.Tensor) and not isinstance(x, (list, tuple)):
        return x + 1
    return x


@case(X)
def builtin_min_max_abs(x):
    return x * min(2, 3) + max(1, 4, 2) + abs(-5)


@case(X)
def builtin_getattr_hasattr(x):
    if hasattr(x, "shape") and not hasattr(x, "no_such_attr"):
        return getattr(x, "T")
    return x


@case(X)
def builtin_conversions(x):
    t = tuple([1, 2])
    l = list((3, 4))
    d = dict(a=1, b=2)
    return x * int("3") + float(2) + bool(1), t, l, d


@case(X)
def builtin_sum_sorted_round(x):
    return x + sum([1, 2, 3]) + round(2.6), sorted([3, 1, 2])


@case(X)
def builtin_range_len(x):
    outs = []
    for i in range(len(x)):
        outs.append(x[i].sum())
    return torch.stack(outs)


@case(X)
def builtin_all_any(x):
    if all([True, 1]) and any([0, 2]):
        return x * 2
    return x


# ---------------------------------------------------------------------------
# Globals, closures, and structured inputs and outputs.


@case(X)
def global_tensor(x):
    return x * GLOBAL_WEIGHT


@case(X)
def global_constant(x):
    return x * GLOBAL_SCALE + len(GLOBAL_NAMES)


@case(X)
def global_module_attr(x):
    return torch.nn.functional.relu(x) + torch.pi


def _make_closure_tensor():
    torch.manual_seed(99)
    bias = torch.randn(4)

    def closure_tensor(x):
        return x + bias

    return closure_tensor


case(X)(_make_closure_tensor())


def _make_closure_constant():
    scale = 0.5
    names = ["p", "q"]

    def closure_constant(x):
        return {names[0]: x * scale, names[1]: x / scale}

    return closure_constant


case(X)(_make_closure_constant())


@case(args(lambda: ({"a": torch.randn(3), "b": torch.randn(3)},)))
def input_dict(d):
    return d["a"] + d["b"]


@case(args(lambda: ([torch.randn(3), torch.randn(3), torch.randn(3)],)))
def input_list(xs):
    total = xs[0]
    for t in xs[1:]:
        total = total + t
    return total, len(xs)


@case(args(lambda: ((torch.randn(2, 2), 3),)))
def input_tuple(pair):
    t, k = pair
    return t * k


@case(args(lambda: (torch.randn(3), 2, 0.5, "mean", None, True)))
def input_constants(x, n, f, mode, nothing, flag):
    if mode == "mean" and nothing is None and flag:
        return x * n + f
    return x


@case(X)
def return_nested(x):
    return {"out": (x + 1, [x * 2, 3]), "meta": {"n": 1, "s": "txt"}}, None


@case(X, graphs=0)  # no tensor work, so no graph
def return_input(x):
    return x


@case(XY)
def return_input_in_tuple(x, y):
    return (x, y + 1, y)


@case(X, graphs=0)
def return_constant_only(x):
    return 1, "a", None


@case(X)
def return_view_of_input(x):
    return x.view(12), x[0], x.t()


@case(args(lambda: (torch.randn(3), None)))
def is_none_checks(x, maybe):
    if maybe is None:
        x = x + 1
    if x is not None:
        x = x * 2
    return x


@case(X, graphs=0)
def no_tensor_work(x):
    a = [1, 2]
    return a[0] + a[1]


@case(randn((3, 4)))
def nested_structure_input_view(x):
    a, b = x.split(2, dim=1)
    return {"a": a, "b": b}


# ---------------------------------------------------------------------------
# Cases the tracer must report as unsupported (a graph break).


def _user_helper(t):
    return t * 2


@tracejit.disable
def _disabled_helper(t):
    return t + 1


@case(X, unsupported="print()")
def unsupported_print(x):
    y = x + 1
    print("hello")  # BREAK
    return y


@case(X, unsupported="Tensor.item()")
def unsupported_item_in_if(x):
    if x.sum().item() > 0:  # BREAK
        return x + 1
    return x - 1


@case(X, unsupported="data-dependent")
def unsupported_if_on_tensor(x):
    if x.sum() > 0:  # BREAK
        return x + 1
    return x - 1


@case(X)  # a user function is inlined into the caller's graph
def inlined_user_function(x):
    return _user_helper(x) + 1


@case(X, unsupported="tracejit.disable")
def unsupported_disabled_function(x):
    return _disabled_helper(x)  # BREAK


@case(X, unsupported="Tensor.tolist()")
def unsupported_tolist(x):
    # the value is needed: traced again breaking at the read
    return str(x.tolist())  # BREAK


@case(X)  # the numbers only leave the graph: made Python numbers after it
def tolist_returned(x):
    return x.tolist()


@case(args(lambda: ([torch.randn(2)],)))  # the append is replayed as a side effect after the graph
def mutate_list_arg(xs):
    xs.append(xs[0] + 1)
    return xs


@case(X, unsupported="data-dependent")
def unsupported_while_on_tensor(x):
    while x.max() > 1:  # BREAK
        x = x / 2
    return x


@case(X, unsupported="Tensor.item()")
def unsupported_item_return(x):
    # the value is needed: traced again breaking at the read
    return "%.3f" % x.sum().item()  # BREAK


@case(X)  # the number only leaves the graph: made a Python float after it
def item_returned(x):
    return x.sum().item()


@case(X, unsupported="data-dependent")
def unsupported_int_of_tensor(x):
    return x * int(x.sum())  # BREAK


@case(args(lambda: (torch.randn(3, 4).requires_grad_(),)))
def backward_into_input_leaf(x):
    # one autograd_grad node; x.grad (None) is set after the graph
    x.sum().backward()
    return x.grad * 2


@case(args(lambda: (torch.randn(3, 4).requires_grad_(),)))
def backward_retain_graph(x):
    # the first node keeps its graph (retain_graph=True); the second
    # backward through it accumulates into x.grad under no_grad
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    return x.grad * 2


@case(args(lambda: (torch.randn(3, 4).requires_grad_(),)), unsupported="create_graph=True")
def unsupported_backward_create_graph(x):
    x.sum().backward(create_graph=True)  # BREAK
    return x


@case(args(lambda: (torch.randn(4, 4),)), unsupported="depends on tensor data")
def unsupported_bool_mask_index(x):
    # The result's size depends on the data: the graph holds it, but Python
    # may not read it before the graph runs.
    y = x[x > 0] * 2
    return y * len(y)  # BREAK


@case(args(lambda: (torch.randn(4, 4),)))
def bool_mask_index_in_graph(x):
    # A data-dependent size stays in the graph (issue 43): ops before and after it.
    y = (x + 1)[x > 0]
    return y.exp() * 2, torch.nonzero(x < 0).sum(0)


@case(X)  # each element a 0-d tensor, stacked
def torch_tensor_of_list(x):
    return x + torch.tensor([1.0, 2.0, 3.0, 4.0])


@case(X, unsupported="torch.tensor")  # more elements than the tracer unrolls
def unsupported_torch_tensor(x):
    return x + torch.tensor([0.5] * 300)[:4]  # BREAK


@case(args(lambda: ({"a": torch.randn(2)},)))  # the store is replayed as a side effect after the graph
def mutate_dict_arg(d):
    d["b"] = d["a"] * 2
    return d


def _make_nonlocal_writer():
    count = 0

    def nonlocal_write(x):
        nonlocal count
        count += 1  # replayed after the graph: the cell's content is assigned
        return x * 2

    return nonlocal_write


case(X)(_make_nonlocal_writer())


@case(X)  # imports of already-imported library modules inside the function
def import_inside(x):
    import math
    from torch.nn import functional as F

    return F.relu(x) * math.pi


class _Affine:
    """A user class instantiated inside traced code (translate_objects.cpp)."""

    bias = 0.5

    def __init__(self, scale):
        self.scale = scale

    def __call__(self, x):
        return x * self.scale + self.bias


@case(X)  # the object exists only in the trace: its __init__ and __call__ are inlined, no side effect
def user_object_inlined(x):
    return _Affine(3.0)(x)


@case(args(lambda: (torch.randn(3, 4), torch.randn(3, 4))))  # tensors as dict keys, by identity
def tensor_dict_keys(x, y):
    d = {x: 1.0, y: 2.0}
    return x * d[x] + y * d[y]


@case(X)  # a set of constants: CPython's own operators at trace time
def set_of_shape(x):
    s = set(x.shape) | {7}
    return x * len(s)


class _ScaledExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        y = torch.exp(x) * scale
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y, None


class _Dirty(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


# A custom Function with grad: forward inline under no_grad, backward outlined
# into the body printed after `return`, one autograd_function node.
@case(args(lambda: (torch.randn(4, 5).requires_grad_(),)))
def autograd_function_grad(x):
    return _ScaledExp.apply(x * 2, 0.5).sum()


@case(args(lambda: (torch.randn(3).requires_grad_(),)), unsupported="mark_dirty")
def unsupported_autograd_function_mark_dirty(x):
    return _Dirty.apply(x * 1)  # BREAK


# ---------------------------------------------------------------------------
# Training-loop idioms (issue 42).

def _param_with_grad():
    p = torch.nn.Parameter(torch.randn(3, 4))
    p.grad = torch.ones(3, 4)
    return (p,)


@case(args(_param_with_grad))  # the write is replayed after the graph; later reads see None
def grad_set_to_none(p):
    y = p * 2
    p.grad = None
    return y, p.grad is None


@case(args(lambda: (torch.randn(3, 4).requires_grad_(),)))  # Tensor.data is a detach() alias
def tensor_data_read(p):
    return p.data * 2, p.data.requires_grad


@case(args(lambda: (torch.nn.Parameter(torch.randn(3, 4)),)))  # replayed after the graph; p stands for t.detach()
def tensor_data_write(p):
    p.data = p.data.clamp(-0.5, 0.5)
    with torch.no_grad():
        p.mul_(2)
    return p.shape, p.requires_grad


class _TwoLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.b(self.a(x))


_TWO = _TwoLinear()


@case(args(lambda: (torch.randn(2, 4),)))  # MODULE_MATCH, not identity: instances share the compile
def module_instance(x):
    return _TWO(x) if _TWO.a is not _TWO.b else x


class _Holder:
    def __init__(self):
        self.scale = torch.full((4,), 2.0)


_HELD = _Holder()


@case(args(lambda: (__import__("weakref").ref(_HELD), torch.randn(3, 4))))  # its referent, read through the call
def weakref_call(ref, x):
    return ref().scale * x


_LSTM = torch.nn.LSTM(4, 3)


@case(args(lambda: (torch.randn(2, 1, 4),)))  # aten::lstm.input with the weight list
def lstm_module(x):
    return _LSTM(x)[0]


class _Bag:
    def __eq__(self, other):  # compared after the call: the deletion was replayed
        return type(other) is _Bag and vars(self) == vars(other)


def _bag():
    b = _Bag()
    b.old = 1
    return b


@case(args(lambda: (torch.randn(3, 4), _bag())))  # the old attribute guarded present; a del_attr side effect
def delattr_input_object(x, b):
    del b.old
    return x + 1


@case(args(lambda: (torch.randn(3, 4),)))  # one clone for the tensor reached twice (deepcopy's memo)
def deepcopy_list_of_tensors(x):
    a = x * 2
    c = copy.deepcopy([a, (a, 3)])
    return c[0] + c[1][0] * c[1][1]


@case(args(lambda: (torch.randn(3, 4).requires_grad_(),)))  # one autograd_grad node; no .grad written
def autograd_grad_of_input(x):
    g, = torch.autograd.grad((x * x).sum(), x)
    return g


@case(args(lambda: (torch.randn(3, 4),)))  # torch.utils._pytree inlined: SUPPORTED_NODES keyed by classes
def pytree_tree_map(x):
    out = _pytree.tree_map(lambda t: t * 2, {"a": x, "b": (x, x + 1)})
    return out["a"] + out["b"][1]
