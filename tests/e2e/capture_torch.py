"""Issue 11: torch's Python-level functions (torch.functional), Tensor.new*,
type(t)/t.__class__, torch.finfo/iinfo, scripting/tracing/export checks
as constants, torch._assert, typing generics, namedtuples, dict.pop and
cache_size_limit, each traced into one graph with eager's values; what
needs tensor data breaks with a reason that says so."""
import collections
from typing import Dict, List, Optional

import torch
import torch.fx

import tracejit
from capture_util import expect
from e2e_util import BACKEND, check, check_equal, finish

x = torch.randn(4, 6)

# torch.functional
expect("torch.split by size", lambda t: torch.split(t, 2, dim=1), (x,))
expect("torch.split by sections", lambda t: torch.split(t, [2, 4], dim=1), (x,))
expect("torch.chunk", lambda t: torch.chunk(t, 3, dim=1), (x,))
expect("torch.functional.split", lambda t: torch.functional.split(t, 3), (x,))
expect("torch.einsum", lambda t: torch.einsum("ij,kj->ik", t, t), (x,))
expect("torch.broadcast_tensors", lambda t: torch.broadcast_tensors(t, t[0]), (x,))
expect("torch.meshgrid", lambda t: torch.meshgrid(t[0], t[1], indexing="ij"), (x,))
expect("torch.norm", lambda t: (torch.norm(t), torch.norm(t, p=2, dim=1)), (x,))
expect("torch.tensordot", lambda t: torch.tensordot(t, t, dims=([1], [1])), (x,))
expect("torch.cdist", lambda t: torch.cdist(t, t * 2), (x,))
expect("torch.block_diag (through torch._VF)", lambda t: torch.block_diag(t, t[:2]), (x,))
expect("torch.cartesian_prod", lambda t: torch.cartesian_prod(t[0], t[1]), (x,))
expect("torch.atleast_2d", lambda t: torch.atleast_2d(t[0]), (x,))
# a size known only when it runs: in the graph all the same (issue 43; data_dependent_sizes.py)
expect("torch.unique stays in the graph", lambda t: torch.unique(t.round()) * 2, (x,))

# torch.special / torch.linalg: their builtins are already named like the
# ATen ops (special_erf, linalg_norm)
expect("torch.special and torch.linalg", lambda t: torch.special.erf(t) + torch.special.expit(t) +
       torch.linalg.norm(t) + torch.linalg.vector_norm(t, 1), (x,))


def cholesky_or_message(a):
    try:
        return torch.linalg.cholesky(a).sum(), "ok"
    except RuntimeError as e:
        return a.sum(), str(e)[:40]


# the error check linalg.cholesky makes after the factorization
# (_linalg_check_errors, an op with no result) is kept in the graph
expect("torch.linalg.cholesky of a positive-definite matrix", cholesky_or_message, (torch.eye(3) * 2,))
expect("torch.linalg.cholesky raising in the graph", cholesky_or_message, (-torch.eye(3),))
check_equal(tracejit.compile(cholesky_or_message, backend=BACKEND)(-torch.eye(3))[1],
            "linalg.cholesky: The factorization could", "torch.linalg.cholesky: eager's error, caught by the user")

# Calls that change nothing return the tensor itself, as in eager: the
# result is the same object and follows in-place metadata changes
def returns_self(t):
    a, b, c, d = t.contiguous(), t.float(), t.to(torch.float32), t.type_as(t)
    e = t.t().contiguous()
    same = (a is t, b is t, c is t, d is t, e is t, t.double() is t)
    u = t[:1]
    v = u.contiguous()
    u.squeeze_(0)
    return same, v.shape, v + 1


expect("contiguous()/float()/to(dtype)/type_as() of a tensor that needs no change is the tensor", returns_self, (x,))

# Tensor.new*
expect("F.pad (torch._C._nn.pad), constant and reflect",
       lambda t: torch.nn.functional.pad(t, (1, 2)) + 1 + torch.nn.functional.pad(t[None], (1, 1), mode="reflect").sum(),
       (x,))
expect("Tensor.new_zeros/new_ones/new_full/new_empty",
       lambda t: t.new_zeros(2, 3) + t.new_ones((2, 3)) + t.new_full((2, 3), 2.0) + t.new_empty(2, 3).zero_(), (x,))
expect("Tensor.new(sizes) and Tensor.new()", lambda t: (t.new(2, 3).zero_(), t.new().numel() + t.sum(),
                                                         t.new(torch.Size([1, 2])).fill_(1)), (x,))

# Types and constants
expect("type(t) is torch.Tensor", lambda t: t * 2 if type(t) is torch.Tensor else t, (x,))
expect("t.__class__", lambda t: t * 2 if t.__class__ is torch.Tensor else t, (x,))
expect("type() of constants and containers", lambda t: t * (type(3) is int) * (type([t]) is list) * (type((1,)) is tuple), (x,))
expect("torch.finfo/torch.iinfo", lambda t: t.clamp(max=torch.finfo(t.dtype).max, min=torch.finfo(t.dtype).min)
       + torch.iinfo(torch.int32).bits + torch.finfo(torch.float16).eps, (x,))
expect("torch.jit.annotate", lambda t: t + len(torch.jit.annotate(List[int], [])), (x,))
expect("torch.jit.is_scripting / onnx / fx tracing are False",
       lambda t: t + 1 if not (torch.jit.is_scripting() or torch.onnx.is_in_onnx_export()
                               or torch.fx._symbolic_trace.is_fx_tracing()) else t, (x,))


def asserts(t):
    torch._assert(t.dim() == 2, "must be 2d")
    return t + 1


expect("torch._assert on a shape", asserts, (x,))
expect("typing generics", lambda t: t + (1 if List[int] is not None and Dict[str, torch.Tensor] and Optional[int] else 0)
       + len(list[int].__args__), (x,))
expect("t.stride() with no argument", lambda t: (t.stride(), t.t().stride(), t * 2), (x,))

# namedtuple instances made in the frame
Point = collections.namedtuple("Point", ["a", "b"], defaults=[5])


def namedtuples(t):
    p = Point(t, t + 1)
    q = Point(b=t * 2, a=t)
    r = Point(t)
    return p.a + p.b + q[1] + r.b, p, q._replace if False else q


expect("collections.namedtuple built in the frame (returned too)", namedtuples, (x,))

# dict.pop
def pop_local(t):
    d = {"a": t, "b": 2}
    return d.pop("a") + d.pop("c", 3), d


def pop_input(t, d):
    return t + d.pop("a"), d.pop("zz", None)


expect("dict.pop on a dict made in the frame", pop_local, (x,))
expect("dict.pop on an input dict (replayed after the graph)", pop_input, None,
       make_args=lambda: (x, {"a": 1, "b": 2}))
d_in = {"a": 1, "b": 2}
tracejit.compile(pop_input)(x, d_in)
check_equal(d_in, {"b": 2}, "the input dict lost its key, as in eager")

# torch.autograd.Function with an input requiring grad: traced into one
# graph (backward outlined into a body), gradients are the custom backward's
# (the cases are in capture_autograd_function.py).
class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t * 2

    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return g * 2 + t


def custom_fn(t):
    return Double.apply(t.sin()).sum() + 1


ex = expect("autograd.Function.apply with grad is one graph", custom_fn, (x.clone().requires_grad_(),))
xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
custom_fn(xe).backward()
tracejit.compile(custom_fn)(xc).backward()
check(torch.allclose(xe.grad, xc.grad), "gradients through a custom Function equal eager's")

# cache_size_limit takes any positive int
tracejit.config.cache_size_limit = 2**31 - 1
check_equal(tracejit.config.cache_size_limit, 2**31 - 1, "cache_size_limit accepts 2**31-1")
expect("a compile under cache_size_limit = 2**31-1", lambda t: t + 1, (x,))
tracejit.config.cache_size_limit = 8
finish()
