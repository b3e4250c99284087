"""The fuzzer's program generator: from a seed, a random but valid Python
function over tensors, as plain source text.

A generated program defines `make_inputs(seed)` (tensors of float32,
float64, int64 and bool, often non-contiguous: transposed, sliced,
expanded), helper functions, a module-level list `LOG`, and `fn(...)`,
whose body is a random sequence of statements drawn from the tables below:
ATen-backed torch functions and Tensor methods, views and in-place ops on
inputs and intermediates, control flow on constants and on tensor values
(graph breaks), helper calls, list/dict glue, prints, and exceptions
caught inside the function; it returns tensors, views of its inputs,
scalars, lists or dicts.

Validity comes from running, not from a model of every op's rules: each
candidate statement is executed (eagerly, on a deep copy of the state the
statements so far produced, which keeps views aliased) and kept only if it
runs; a statement meant to raise inside `try` is kept only if it raises.
So the tables may be loose and still every program runs eagerly, and the
generator stays small. Runs with /usr/bin/python3.11 or under the launcher.

The widened kinds (round 11, on unless wide=False; each reaches a class
of defect another generator found, tests/regressions/26..33): inputs
requiring grad in every layout (expanded, transposed, sliced, offset,
size-1 dims; the runner compares their gradients after a backward); dead
statements (`uN = ...`, never read) of ops whose derivative can be NaN or
inf (rsqrt, log, sqrt, reciprocal, pow of negatives...); clamp with
tensor bounds and where with scalar branches over operands of other
dtypes and layouts (another layout of the same shape first, made
column-major when none is there; expanded receivers first), results
returned; views of inputs requiring grad (expanded ones first) returned;
methods that may return their receiver (contiguous, to, reshape,
expand_as, ...) after an in-place op on it, their result returned and
its identity logged; side effects (LOG, prints, an input write) before
an op that runs at the validated sizes and raises at most others (so
under --dynamic the program raises at some sizes), at times only its
.shape read; caught exceptions' whole messages printed. wide=False draws
exactly the programs of before (old fixed-seed tests replay them:
fuzz.py --narrow).

Dynamic-shape mode (generate(..., dynamic=True)): the same program, its
make_inputs taking `variant` too; variant 0 is the validated sizes, and
variants 1.. resize every input size >= 2 (to 2..7, sometimes 8..40;
sizes 0 and 1 stay), keeping or breaking equalities between sizes, so
guards, duck sizing and recompiles are exercised. Statements are
validated at variant 0 only.

Usage: gen.py SEED [--dynamic] [--narrow]   prints the program of SEED.
"""
import contextlib
import io
import os
import random
import re
import sys
import warnings

import torch

DTYPES = [torch.float32, torch.float32, torch.float64, torch.int64, torch.bool]
DTYPE_NAMES = {torch.float32: "torch.float32", torch.float64: "torch.float64",
               torch.int64: "torch.int64", torch.bool: "torch.bool"}

# {a}, {b}: tensors; {d}, {e}: dims of {a}; {s}: a Python scalar local.
UNARY = [
    "torch.neg({a})", "{a}.abs()", "torch.relu({a})", "torch.sigmoid({a})", "{a}.tanh()", "torch.exp({a})",
    "{a}.sin()", "torch.sqrt({a}.abs())", "{a}.floor()", "torch.clamp({a}, min=-1, max=1)", "{a}.sign()",
    "~{a}", "torch.logical_not({a})", "{a} * 2", "{a} + 1.5", "3 - {a}", "{a} ** 2", "2 ** {a}", "{a} / 2",
    "{a} // 2", "{a} % 3", "-{a}", "{a}.float()", "{a}.long()", "{a}.bool()", "{a}.to(torch.float64)",
    "{a}.double()", "{a}.clone()", "{a}.contiguous()", "torch.square({a})", "{a}.reciprocal()",
    "torch.nan_to_num({a})", "torch.where({a} > 0, {a}, 0)", "{a}.clamp(max=0.5)", "{a} * {s}",
    "{a} + {s}", "torch.rsqrt({a}.abs() + 1)", "{a}.log1p()", "torch.erf({a})", "{a}.round()",
    "torch.isnan({a})", "{a}.int().long()", "{a} != 0", "{a}.masked_fill({a} > 0, -1)",
    "torch.flip({a}, [{d}])", "{a}.roll(1, {d})", "torch.tril({a})", "{a}.type_as({b})",
    "torch.zeros_like({a})", "torch.ones_like({a}) * 3", "torch.full_like({a}, 7)", "{a}.new_zeros(2)",
    "{a}.repeat(2, *([1] * ({a}.dim() - 1)))",
]
BINARY = [
    "{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / {b}", "torch.maximum({a}, {b})", "torch.minimum({a}, {b})",
    "torch.where({a} > {b}, {a}, {b})", "{a} == {b}", "{a} < {b}", "{a} >= {b}", "{a} & {b}", "{a} | {b}",
    "{a} ^ {b}", "torch.atan2({a}, {b})", "{a}.pow({b})", "{a} // {b}", "{a} % {b}", "torch.fmod({a}, {b})",
    "torch.logical_and({a}, {b})", "torch.add({a}, {b}, alpha=2)", "torch.lerp({a}, {b}, 0.25)",
    "torch.addcmul({a}, {a}, {b}, value=0.5)", "torch.hypot({a}, {b})", "torch.sub({a}, {b})",
    "{a}.mul({b}).sum({d})", "torch.eq({a}, {b}).all()", "{a}.masked_fill({b} > 0, 0)",
    "torch.where({b}.bool(), {a}, {b})", "{a}.expand_as({b}) + 0", "{a}.copysign({b})",
]
REDUCE = [
    "{a}.sum()", "{a}.sum(dim={d})", "{a}.sum({d}, keepdim=True)", "{a}.mean({d})", "{a}.mean()",
    "{a}.amax({d})", "{a}.max({d}).values", "torch.max({a}, {d})[1]", "{a}.argmax({d})", "{a}.cumsum({d})",
    "torch.softmax({a}, {d})", "{a}.var({d})", "{a}.std()", "{a}.prod({d})", "{a}.any()", "{a}.all({d})",
    "torch.logsumexp({a}, {d})", "{a}.norm()", "{a}.min()", "{a}.sort({d}).values", "{a}.topk(1, {d}).indices",
    "{a}.count_nonzero({d})", "torch.log_softmax({a}, {d})", "{a}.cummax({d})[0]", "{a}.argsort({d})",
    "{a}.sum(({d}, {e}))", "torch.mean({a}, ({d},), True)", "{a}.median()",
]
VIEW = [
    "{a}.t()", "{a}.transpose({d}, {e})", "{a}.permute(*reversed(range({a}.dim())))", "{a}.unsqueeze({d})",
    "{a}.unsqueeze(0)", "{a}.squeeze()", "{a}.squeeze({d})", "{a}.reshape(-1)", "{a}.view(-1)",
    "{a}.flatten()", "{a}[1:]", "{a}[::2]", "{a}[:, 0]", "{a}[..., :1]", "{a}[0]", "{a}[-1]",
    "{a}.narrow({d}, 0, 1)", "{a}.select({d}, 0)", "{a}.expand(2, *{a}.shape)", "{a}.diagonal()",
    "{a}.unbind({d})[0]", "{a}.chunk(2, {d})[-1]", "{a}.split(1, {d})[0]", "{a}.movedim(0, -1)",
    "{a}.view_as({a})", "{a}[None]", "{a}[...]", "{a}[:]", "{a}.mT", "{a}.real", "{a}.detach()",
    "{a}.view({a}.shape)", "{a}.reshape({a}.shape[::-1])", "{a}.unflatten(0, (1, -1))",
    "{a}[{a} > 0]", "{a}[torch.tensor([0])]", "{a}.index_select({d}, torch.tensor([0, 0]))",
    "{a}.gather({d}, torch.zeros_like({a}, dtype=torch.int64))", "{a}.as_strided((2,), (1,))",
    "{a}.view(torch.int64)", "{a}.T", "{a}[:, None]", "{a}[..., ::-1]",
]
INPLACE = [
    "{a}.add_({b})", "{a}.mul_(2)", "{a}.clamp_(min=0)", "{a}.relu_()", "{a}.neg_()", "{a}.zero_()",
    "{a}.fill_(3)", "{a}.copy_({b})", "{a}[0] = {b}", "{a}[1:] = 7", "{a}[{a} > 0] = 0", "{a}[...] = {b}",
    "{a}.masked_fill_({a} > 0, 1)", "{a}.unsqueeze_(0)", "{a}.t_()", "{a}.transpose_(0, {d})", "{a}.squeeze_()",
    "{a}.sub_({b}, alpha=2)", "{a}.div_(2)", "{a}.abs_()", "{a}.sigmoid_()", "{a} += {b}", "{a} *= 2",
    "{a}.index_fill_({d}, torch.tensor([0]), -1)", "{a}[:, 0] = {b}", "{a}[:] = {a}", "{a}.floor_divide_(2)",
    "{a}.logical_not_()", "{a}.exp_()", "{a}.addcmul_({b}, {b})", "{a}.lerp_({b}, 0.5)", "{a}[0, 0] = 5",
    "{a}.set_({b})", "{a}.requires_grad_()", "{a}.detach_()",
]
MATMUL = [
    "{a} @ {a}.transpose(-1, -2)", "{a}.flatten() @ {a}.flatten()", "torch.mm({a}, {b}.t())",
    "torch.matmul({a}, {b})", "{a}.mT @ {b}", "torch.einsum('ij,kj->ik', {a}, {b})", "torch.bmm({a}, {b}.mT)",
    "torch.outer({a}.flatten(), {b}.flatten())", "torch.mv({a}, {b}[0])", "torch.addmm({b}, {a}, {a}.t())",
]
JOIN = [
    "torch.cat([{a}, {b}], {d})", "torch.stack([{a}, {b}])", "torch.cat([{a}, {a}.flip(0)])",
    "torch.stack([{a}, {a}], {d})", "torch.cat(({a}.flatten(), {b}.flatten()))", "torch.broadcast_tensors({a}, {b})[1]",
]
FACTORY = [
    "torch.zeros({n})", "torch.ones({n}, {n})", "torch.arange({n})", "torch.tensor([1.0, 2.0])",
    "torch.full(({n},), 3)", "torch.arange(6).reshape(2, 3)", "torch.eye({n})", "torch.linspace(0, 1, {n})",
    "torch.tensor(2.5)", "torch.full((2,), True)", "torch.arange(1.5, 4)", "torch.tensor([[1, 2], [3, 4]]).t()",
]
SCALAR = [
    "{a}.shape[{d}]", "{a}.numel()", "{a}.dim()", "float({a}.sum())", "{a}.sum().item()", "len({a})",
    "{a}.size(-1)", "int({a}.max())", "{a}.stride({d})", "{a}.stride()[0]", "{a}.is_contiguous()",
    "{a}.storage_offset()", "bool({a}.any())", "{a}.element_size()", "{a}.shape[-1] * 2 + 1",
]
RAISING = [
    "{a} + torch.ones(7, 5)", "{a}.view(7, -1)", "{a}[10]", "torch.mm({a}, {a})", "{a}.reshape(-1, 7)",
    "{a}.add_(0.5)", "{a} // 0", "{a}.sum(dim=5)", "torch.cat([{a}, torch.ones(9, 9, 9)])",
    "{a}.expand(3, 7)", "{a}.view(torch.int32)[99]", "{a}.item()", "{a}[0].bool().all().item().foo",
    "[1, 2][5]", "{{'k': {a}}}['missing']", "{a}.transpose(0, 9)", "int('x')", "{a}.unsqueeze(9)",
]
PRINTS = [
    "print('p', {a}.shape, {a}.dtype)", "print('p', {a}.stride(), {a}.is_contiguous())",
    "print('p', {a}.long().tolist())", "print('p', {a}.bool().tolist())", "print('p', {a}.dim(), len(LOG))",
    "print('p', type({a}).__name__, {a}.requires_grad)",
]
HELPERS = [
    "def {name}(a, b):\n    return a * b + 1\n",
    "def {name}(a):\n    t = a.float().sin()\n    if t.sum() > 0:\n        return t\n    return -t\n",
    "def {name}(a, k=2):\n    return [a * k, a + k]\n",
    "def {name}(a):\n    a.mul_(2)\n    return a\n",
    "def {name}(a, b):\n    LOG.append(a.shape)\n    return torch.where(a > 0, a, b)\n",
    "def {name}(a):\n    return a.transpose(0, -1)[0]\n",
    "def {name}(a, b):\n    try:\n        return a @ b\n    except RuntimeError:\n        return a + b\n",
    "def {name}(*args):\n    return sum(t.sum() for t in args)\n",
    "def {name}(a, **kw):\n    return a * kw.get('scale', 1)\n",
]
# The widened generator's tables (wide=True, the default since the
# eleventh round; wide=False draws exactly the programs of before, which
# old fixed-seed tests replay). Each targets a class of defect another
# generator found and this one could not reach (tests/regressions/26..33).
# Ops whose derivative is NaN or inf for some inputs (negative, zero,
# outside [-1, 1]): drawn as dead statements (a `u` local nothing reads,
# so a backward that still runs their derivative poisons the gradient) and
# now and then as live ones.
NAN_GRAD = [
    "torch.rsqrt({a})", "{a}.log()", "torch.sqrt({a})", "{a}.reciprocal()", "{a}.pow(0.5)", "{a} ** -1.5",
    "torch.log2({a})", "{a}.acos()", "{a}.asin()", "torch.atanh({a})", "{a}.log10()", "{a}.rsqrt() * 2",
    "torch.pow({a}, -1)", "1 / {a}", "{a}.sqrt().sum()", "torch.log({a} - 1)", "{a}.pow({b})", "{a}.log1p()",
]
# Promoting ops whose operands may differ in dtype and layout (the result
# takes one of the operands' layouts): clamp with tensor bounds, where with
# a scalar branch. {c}: a third tensor.
PROMOTE = [
    "torch.clamp({a}, min={b})", "torch.clamp({a}, max={b})", "{a}.clamp({b}, {c})", "torch.clamp_min({a}, {b})",
    "torch.clamp_max({a}, {b})", "{a}.clamp(min={b}, max={c})", "torch.clamp({a}, min={b}.double())",
    "torch.where({a} != 0, {b}, 0.0)", "torch.where({a} > 0, 1.5, {b})", "torch.where({a}.bool(), {b}, 2)",
    "torch.where({a} != 0, {b}, {c})", "torch.where({a} < 1, 0, {b})", "torch.where({a} > 0, {b}.long(), 0.5)",
    "torch.maximum({a}, {b}.double())", "torch.where({a} == 0, {b}, True)",
]
# Methods that may return their receiver itself (`r is x`) or a view or a
# copy depending on its layout and dtype, drawn after an in-place op on the
# receiver (which may change that layout).
MAYBE_SELF = [
    "{a}.contiguous()", "{a}.to({a}.dtype)", "{a}.to(torch.float32)", "{a}.to(torch.float64)",
    "{a}.reshape({a}.shape)", "{a}.reshape(-1)", "{a}.expand_as({a})", "{a}.type_as({a})", "{a}.float()",
    "{a}.double()", "{a}.long()", "{a}.view_as({a})", "{a}.to(dtype={a}.dtype, copy=False)", "{a}.flatten()",
    "{a}.contiguous(memory_format=torch.contiguous_format)", "{a}.type({a}.type())", "{a}.bool()",
]
MAYBE_SELF_BEFORE = [
    "{a}.add_(1)", "{a}.mul_(2)", "{a}.t_()", "{a}.unsqueeze_(0)", "{a}.squeeze_()", "{a}.transpose_(0, -1)",
    "{a}.copy_({b})", "{a}[0] = 1", "{a}.zero_()", "{a}.abs_()", "{a}.unsqueeze_(-1)", "{a}.as_strided_({a}.shape, {a}.stride())",
]
# Ops that run at the validated input sizes and raise at most others (a
# fixed size {k} read from the input at variant 0): under --dynamic the
# program raises at some variants, after side effects (LOG, prints, input
# writes) that must survive. {k}: a's last size, {k0}: its first.
SIZED = [
    "torch.where(torch.full(({k},), 1.0) != 0, {a}, 0.0)", "{a} + torch.ones({k})", "{a}.view({k0}, -1)",
    "{a}.reshape(-1, {k})", "{a}.narrow(0, 0, {k0})", "{a}[{k0} - 1]", "{a}.unflatten(0, (2, -1))",
    "torch.cat([{a}, torch.zeros({k0}, {k})], 1)", "{a}.mul(torch.arange({k}))", "{a}.split({k0} // 2 + 1)[1]",
    "torch.stack([{a}, torch.ones({k})])", "{a}.expand({k0}, {k})", "{a}.view(-1, 2)",
    "torch.where({a} > 0, torch.full(({k},), 2.0), {a}).shape", "torch.where(torch.ones({k}, dtype=torch.bool), {a}, 1)",
    "torch.where({a} != 0, {a}, torch.full(({k},), 0.5))", "torch.where(torch.arange({k}) > 0, 0.0, {a})",
]
SIZED_BEFORE = ["LOG.append('x')", "LOG.append({a}.shape)", "print('p', {a}.dim())", "{a}.add_(1)", "LOG.append(len({a}))",
                "LOG.append({a}.sum())"]  # none breaks the graph: the raising op is in the same graph

HELPER_CALLS = {0: "{h}({a}, {b})", 1: "{h}({a})", 2: "{h}({a})[1]", 3: "{h}({a})", 4: "{h}({a}, {b})",
                5: "{h}({a})", 6: "{h}({a}, {b})", 7: "{h}({a}, {b})", 8: "{h}({a}, scale=3)"}


# Dynamic mode: the share of programs that open with s_sized_first
# (TRACEJIT_FUZZ_SIZED_FIRST overrides it; 0 turns it off).
SIZED_FIRST = float(os.environ.get("TRACEJIT_FUZZ_SIZED_FIRST", "0.25"))

# Input sizes a dynamic program's make_inputs knows (variant 0 + 5 others);
# fuzz.py --variants N sets more (the one program for every size of the llvm
# backend needs 8 sizes or more to serve one: compile/aot/size_programs.h).
VARIANTS = int(os.environ.get("TRACEJIT_FUZZ_VARIANTS", "6"))


def size_expr(dim, mul=1, add=0):
    """`dim` (a size as source text) times `mul` plus `add`, folded when
    it is a literal, so that a program without size variables reads as
    plain numbers."""
    if dim.isdigit():
        return str(int(dim) * mul + add)
    return dim + (f" * {mul}" if mul != 1 else "") + (f" + {add}" if add else "")


class Unfit(Exception):
    """A candidate statement that does not run (or that should have raised)."""


class Generator:
    """Builds one program statement by statement, keeping the live state
    (the locals fn would have at this point) to validate each candidate."""

    def __init__(self, seed, max_stmts=None, exclude=(), dynamic=False, wide=True):
        self.rng = random.Random(seed)
        self.dynamic = dynamic
        self.wide = wide
        self.exclude = [e for e in exclude if e]  # substrings no statement may contain
        self.seed = seed
        self.max_stmts = max_stmts or self.rng.randint(3, 14)
        self.counter = 0
        self.helpers = []          # source of each helper
        self.glob = {"torch": torch}
        self.state = {"LOG": []}   # fn's locals, plus LOG
        self.body = []             # source lines of fn's body (4-space indented)
        self.code = []             # the same statements, unindented, one string each
        self.params = []
        self.must_return = []      # locals the return must include (wide: results of MAYBE_SELF)

    # --- names and picks ---
    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def tensors(self):
        """The tensor locals later statements may read: not the `u` ones
        (dead results, never read)."""
        return [k for k, v in self.state.items() if isinstance(v, torch.Tensor) and not k.startswith("u")]

    def pick_tensor(self, inputs_first=0.5, cond=None):
        """A tensor local, an input with probability `inputs_first` when
        one qualifies (the inputs carry the layouts and requires_grad)."""
        ts = [t for t in self.tensors() if cond is None or cond(self.state[t])]
        if not ts:
            raise Unfit()
        ins = [t for t in ts if t in self.params]
        return self.rng.choice(ins if ins and self.rng.random() < inputs_first else ts)

    def scalars(self):
        return [k for k, v in self.state.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "LOG"]

    def containers(self, kind):
        return [k for k, v in self.state.items() if isinstance(v, kind) and k != "LOG"]

    def fill(self, template, a=None, b=None):
        r = self.rng
        ts = self.tensors()
        a = a or r.choice(ts)
        b = b or r.choice(ts)
        ndim = max(self.state[a].dim(), 1)
        scal = self.scalars()
        extra = {}
        if "{c}" in template:  # drawn only here: the tables of before keep their random stream
            extra["c"] = self.pick_tensor()
        if "{k" in template:
            shape = self.state[a].shape
            extra.update(k=shape[-1] if shape else 1, k0=shape[0] if shape else 1)
        return template.format(a=a, b=b, d=r.randrange(-ndim, ndim), e=r.randrange(-ndim, ndim),
                               s=r.choice(scal) if scal else r.choice(["2", "0.5", "-1"]), n=r.randint(1, 4),
                               h="", **extra)

    # --- running candidates ---
    def trial(self, code, must_raise=False):
        """Runs the statements so far and then `code` on fresh inputs (a
        replay, so views, autograd history and LOG are as fn would have
        them); returns the namespace, or raises Unfit."""
        ns = dict(self.glob)
        ns["LOG"] = self.glob["LOG"] = []  # the helpers' globals are self.glob
        ns.update(zip(self.params, self.input_maker(self.seed)))
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                for done in self.code:
                    exec(done, ns)
                exec(code, ns)
        except Exception:
            if must_raise:
                return ns
            raise Unfit()
        if must_raise:
            raise Unfit()
        return ns

    def allowed(self, code):
        if any(e in code for e in self.exclude):
            raise Unfit()

    def commit(self, code, lines):
        """Keeps `code` (it must run) and its source `lines`."""
        self.allowed(code)
        ns = self.trial(code)
        self.state = {k: v for k, v in ns.items()
                      if (k == "LOG" or k not in self.glob) and not k.startswith("__")}
        self.code.append(code)
        self.body.extend(lines)

    def try_stmt(self, make, attempts=12):
        for _ in range(attempts):
            try:
                self.pending_return = []
                code, lines = make()
                self.commit(code, lines)
                self.must_return += self.pending_return
                return True
            except (Unfit, IndexError, ValueError, KeyError):
                continue
        return False

    # --- statement kinds: each returns (code, lines) ---
    def assign(self, table, a=None, target=None):
        expr = self.fill(self.rng.choice(table), a)
        target = target or self.fresh("v")
        code = f"{target} = {expr}\n"
        return code, ["    " + code.rstrip()]

    def s_op(self):
        tables, weights = [UNARY, BINARY, REDUCE, VIEW, MATMUL, JOIN, FACTORY], [6, 6, 3, 5, 1, 1, 1]
        if self.wide:
            tables, weights = tables + [NAN_GRAD, PROMOTE], weights + [1, 1]
        return self.assign(self.rng.choices(tables, weights=weights)[0])

    def s_inplace(self):
        stmt = self.fill(self.rng.choice(INPLACE))
        if "=" not in stmt and self.rng.random() < 0.3:
            stmt = f"{self.fresh('v')} = {stmt}"
        return stmt + "\n", ["    " + stmt]

    def s_scalar(self):
        stmt = f"{self.fresh('s')} = {self.fill(self.rng.choice(SCALAR))}"
        return stmt + "\n", ["    " + stmt]

    def s_print(self):
        stmt = self.fill(self.rng.choice(PRINTS))
        return stmt + "\n", ["    " + stmt]

    def s_if_tensor(self):
        """`if <tensor value> > T:` with T away from the value (so float
        rounding cannot flip the branch), both branches valid."""
        r = self.rng
        a = r.choice(self.tensors())
        cond_expr = r.choice(["{a}.sum()", "{a}.float().mean()", "{a}.max().item()", "{a}.any()", "{a}.numel()"])
        cond_expr = cond_expr.format(a=a)
        ns = self.trial(f"__c = float({cond_expr})\n")
        value = ns["__c"]
        if value != value or abs(value) > 1e6:
            raise Unfit()
        threshold = round(value) + r.choice([-0.5, 0.5])
        cond = f"{cond_expr} > {threshold}" if "any" not in cond_expr else cond_expr
        target = self.fresh("v")
        then_code, then_lines = self.assign(UNARY + BINARY, target=target)
        else_code, else_lines = self.assign(UNARY + BINARY, target=target)
        self.trial(then_code)
        self.trial(else_code)
        code = f"if {cond}:\n    {then_code}else:\n    {else_code}"
        return code, [f"    if {cond}:", "    " + then_lines[0], "    else:", "    " + else_lines[0]]

    def s_if_const(self):
        r = self.rng
        a = r.choice(self.tensors())
        cond = r.choice([f"{a}.shape[0] > 2", f"{a}.dtype == torch.float32", f"{a}.is_contiguous()",
                         f"{a}.dim() == 2", "len(LOG) > 0", f"{a}.requires_grad", f"isinstance({a}, torch.Tensor)"])
        target = self.fresh("v")
        then_code, then_lines = self.assign(UNARY + VIEW + REDUCE, target=target)
        else_code, else_lines = self.assign(UNARY + VIEW, target=target)
        self.trial(then_code)
        self.trial(else_code)
        code = f"if {cond}:\n    {then_code}else:\n    {else_code}"
        return code, [f"    if {cond}:", "    " + then_lines[0], "    else:", "    " + else_lines[0]]

    def s_loop(self):
        r = self.rng
        a = r.choice(self.tensors())
        t = self.fresh("v")
        op = r.choice(["{t} = {t} * 0.5 + i", "{t} = {t} + {t}.sum() * i", "{t}.add_(i)", "{t} = torch.cat([{t}, {t}])[:len({t})]",
                       "LOG.append(i)", "{t} = {t}.flip(0) if i % 2 else {t}"]).format(t=t)
        code = f"{t} = {a}.clone()\nfor i in range({r.randint(1, 4)}):\n    {op}\n"
        lines = [f"    {t} = {a}.clone()", "    " + code.splitlines()[1], "        " + op]
        return code, lines

    def s_try(self):
        r = self.rng
        raising = self.fill(r.choice(RAISING))
        self.trial(raising + "\n", must_raise=True)
        before = []
        if r.random() < 0.4:
            before = [self.fill(r.choice(["LOG.append({a}.shape)", "print('before', {a}.dim())", "{a}.add_(1)",
                                          "v0 = {a} * 2"]))]
        target = self.fresh("v")
        fallback = self.fill(r.choice(UNARY))
        msg = r.choice(["type(e).__name__", "str(e)[:40]", "repr(e)[:60]", "isinstance(e, RuntimeError)"])
        exc = r.choice(["Exception", "(RuntimeError, IndexError, TypeError, ValueError, KeyError, AttributeError, ZeroDivisionError)", "RuntimeError"])
        body = before + [f"{target} = {raising}"]
        code = "try:\n" + "".join(f"    {b}\n" for b in body) + \
               f"except {exc} as e:\n    print('caught', {msg})\n    {target} = {fallback}\n"
        return code, ["    " + line for line in code.splitlines()]

    def s_helper(self):
        r = self.rng
        idx = r.randrange(len(HELPERS))
        name = self.fresh("helper")
        src = HELPERS[idx].format(name=name)
        self.allowed(src)
        exec(src, self.glob)
        self.helpers_ns[name] = self.glob[name]
        self.helpers.append(src)
        call = HELPER_CALLS[idx].replace("{h}", name)
        return self.assign([call])

    def s_list(self):
        r = self.rng
        lists, dicts = self.containers(list), self.containers(dict)
        choices = [lambda: self.fill(f"{self.fresh('l')} = [{{a}}, {{b}}]"),
                   lambda: self.fill(f"{self.fresh('d')} = {{{{'x': {{a}}, 'n': {{d}}}}}}")]
        if lists:
            l = r.choice(lists)
            choices += [lambda: self.fill(f"{l}.append({{a}} * 2)"), lambda: self.fill(f"{self.fresh('v')} = {l}[0] + {l}[-1]"),
                        lambda: f"{self.fresh('v')} = torch.stack({l})", lambda: f"{l}.reverse()",
                        lambda: f"{self.fresh('v')} = {l}.pop()", lambda: f"{self.fresh('v')} = [t.sum() for t in {l}][0]"]
        if dicts:
            d = r.choice(dicts)
            choices += [lambda: self.fill(f"{d}['y'] = {{a}} - 1"), lambda: f"{self.fresh('v')} = {d}['x']",
                        lambda: f"{self.fresh('v')} = {d}.get('y', {d}['x'])", lambda: f"LOG.extend({d}.keys())",
                        lambda: f"{self.fresh('v')} = sum(t.sum() for k, t in {d}.items() if k != 'n')"]
        stmt = r.choice(choices)()
        return stmt + "\n", ["    " + stmt]

    def s_log(self):
        stmt = self.fill(self.rng.choice(["LOG.append({a}.sum())", "LOG.append({a})", "LOG.append({a}.shape)",
                                          "LOG.append({a}.stride())", "LOG.append({a}[0].tolist())"]))
        return stmt + "\n", ["    " + stmt]

    # --- the widened kinds (wide=True) ---
    def s_dead(self):
        """`uN = <op with a NaN/inf derivative>(t)`, never read again: its
        derivative must not reach t's gradient, and an input only dead
        code reads must get no gradient (None). Prefers inputs."""
        grad = [t for t in self.tensors() if self.state[t].requires_grad]
        a = self.rng.choice(grad) if grad and self.rng.random() < 0.6 else self.pick_tensor(inputs_first=0.7)
        return self.assign(NAN_GRAD, a=a, target=self.fresh("u"))

    def s_promote(self):
        """clamp/where over operands of other dtypes and layouts (inputs
        first: they carry the layouts)."""
        r = self.rng
        expanded = [t for t in self.tensors() if 0 in self.state[t].stride() and self.state[t].numel() > 1]
        a = r.choice(expanded) if expanded and r.random() < 0.3 else self.pick_tensor(0.6)
        x = self.state[a]
        other = [t for t in self.tensors() if t != a and self.state[t].shape == x.shape and x.numel() > 1
                 and self.state[t].stride() != x.stride()]  # another layout of the same shape
        overlapping = 0 in x.stride() and x.numel() > 1
        if other and r.random() < (0.3 if overlapping else 0.7):
            b = r.choice(other)
        elif x.dim() >= 2 and x.numel() > 1 and r.random() < (0.8 if overlapping else 0.4):
            # none there: a's values laid out column-major, perhaps of a wider dtype
            b = r.choice([f"{a}.mT.contiguous().mT", f"{a}.double().mT.contiguous().mT", f"{a}.long().mT.contiguous().mT"])
        else:
            b = self.pick_tensor(0.6)
        v = self.fresh("v")
        if r.random() < 0.5:
            self.pending_return = [v]  # its layout is compared
        code = f"{v} = {self.fill(r.choice(PROMOTE), a, b)}\n"
        return code, ["    " + code.rstrip()]

    def s_grad_view(self):
        """A view of an input requiring grad (expanded ones first: their
        elements share memory), returned: backward through a view output
        of a leaf of that layout."""
        r = self.rng
        grad = [t for t in self.params if isinstance(self.state.get(t), torch.Tensor) and self.state[t].requires_grad]
        if not grad:
            raise Unfit()
        overlapping = [t for t in grad if 0 in self.state[t].stride()]
        a = r.choice(overlapping if overlapping and r.random() < 0.6 else grad)
        v = self.fresh("v")
        self.pending_return = [v]
        code = f"{v} = {self.fill(r.choice(VIEW), a)}\n"
        return code, ["    " + code.rstrip()]

    def s_maybe_self(self):
        """An in-place op on t (often none), then `v = t.<method that may
        return t>()`: v's identity (`v is t`, logged or returned alongside
        t), layout and aliasing are compared."""
        r = self.rng
        a = self.pick_tensor(0.6)
        lines = []
        if r.random() < 0.7:
            lines.append(self.fill(r.choice(MAYBE_SELF_BEFORE), a))
        v = self.fresh("v")
        lines.append(f"{v} = {self.fill(r.choice(MAYBE_SELF), a)}")
        if r.random() < 0.5:
            lines.append(r.choice([f"LOG.append({v} is {a})", f"print('p', {v} is {a}, {v}.stride())",
                                   f"LOG.append(({v} is {a}, {v}.is_contiguous()))"]))
        self.pending_return = [v] + ([a] if r.random() < 0.5 else [])
        code = "".join(l + "\n" for l in lines)
        return code, ["    " + l for l in lines]

    def s_sized(self, forms=None):
        """Side effects (LOG, print, an input write), then an op that runs at
        the validated sizes and raises at others (a size read at variant 0
        written as a literal): under --dynamic, the program raises at some
        variants and what it did before must survive; sometimes in try."""
        r = self.rng
        a = self.pick_tensor(0.8, cond=lambda t: t.dim() >= 1 and min(t.shape[0], t.shape[-1]) >= 2)
        lines = [self.fill(r.choice(SIZED_BEFORE), a) for _ in range(r.choice([1, 1, 2]))]
        v = self.fresh("v")
        expr = self.fill(r.choice(forms or SIZED), a)
        if r.random() < 0.4 and not expr.endswith(".shape"):
            expr += ".shape"  # only its size read: the shape computation alone must raise as eager does
        lines.append(f"{v} = {expr}")
        if r.random() < 0.2:
            lines = ["try:"] + ["    " + l for l in lines] + [
                "except Exception as e:", f"    print('caught', type(e).__name__, str(e))", f"    {v} = {a}"]
        code = "".join(l + "\n" for l in lines)
        return code, ["    " + l for l in lines]

    def s_sized_first(self):
        """s_sized, then a graph break (a branch on a value the sized op
        did not make): the first graph of a dynamic program."""
        # mostly `where` (its meta kernel is Python's: the defect of 31/32)
        code, lines = self.s_sized([f for f in SIZED if f.startswith("torch.where")]
                                   if self.rng.random() < 0.6 else None)
        a = self.pick_tensor(1.0)
        extra = [f"if {a}.sum() > 0:", "    LOG.append('pos')"]
        return code + "".join(l + "\n" for l in extra), lines + ["    " + l for l in extra]

    KINDS = [("s_op", 12), ("s_inplace", 4), ("s_scalar", 2), ("s_print", 1.5), ("s_if_tensor", 1.5),
             ("s_if_const", 1.5), ("s_loop", 1), ("s_try", 1.5), ("s_helper", 1.5), ("s_list", 1.5),
             ("s_log", 1)]
    WIDE_KINDS = [("s_dead", 1.5), ("s_promote", 1.5), ("s_maybe_self", 1.5), ("s_sized", 1.5), ("s_grad_view", 1)]

    # --- inputs ---
    def make_inputs(self):
        r = self.rng
        base = [r.randint(1, 4) for _ in range(r.choice([0, 1, 2, 2, 2, 3, 3]))]
        # The same sizes as source text: under `dynamic`, a base size >= 2 is
        # the name of a size variable (n0, n1, ...) that make_inputs' variant
        # picks; otherwise every size is its digits, as before.
        self.base = base
        syms = [f"n{i}" if self.dynamic and v >= 2 else str(v) for i, v in enumerate(base)]
        lines, params = [], []
        for i in range(r.randint(1, 3)):
            name = f"x{i}"
            shape, dims = list(base), list(syms)
            if shape and r.random() < 0.3:
                cut = r.randint(0, len(shape))
                shape, dims = shape[cut:], dims[cut:]
            ones = [r.random() < 0.15 for _ in shape]
            shape = [1 if o else s for o, s in zip(ones, shape)]
            dims = ["1" if o else d for o, d in zip(ones, dims)]
            if r.random() < 0.05:
                shape, dims = (shape[:-1] + [0], dims[:-1] + ["0"]) if shape else ([0], ["0"])
            dtype = r.choice(DTYPES)
            lines.append(f"    {name} = {self.layout(shape, dims, dtype)}")
            params.append(name)
        if r.random() < 0.25:
            lines.append(f"    x{len(params)} = {r.choice(['3', '0.5', '-2'])}")
            params.append(f"x{len(params)}")
        no_grad = any(e in ".requires_grad_()" for e in self.exclude)
        if self.wide and not no_grad:
            # Leaves requiring grad in every layout the inputs take
            # (expanded, transposed, sliced, offset, size-1 dims): their
            # gradients are compared (values, None or not, strides).
            for p, l in zip(params, lines):
                if "float" in l and r.random() < (0.3 if l.endswith(("float32)", "float64)")) else 0.6):  # laid out: more often
                    lines.append(f"    {p}.requires_grad_()")
        elif not self.wide and r.random() < 0.1 and any("float" in l for l in lines) and not no_grad:
            first = next(p for p, l in zip(params, lines) if "float" in l)
            lines.append(f"    {first}.requires_grad_()")
        return lines, params

    def layout(self, shape, dims, dtype):
        """Source making a tensor of `shape` (its sizes as source text in
        `dims`) and `dtype`, perhaps non-contiguous. Choices read `shape`
        (variant 0's sizes), so `dims` does not change the random stream."""
        r = self.rng
        kind = r.choice(["plain", "plain", "transposed", "sliced", "expanded", "offset"]) if shape else "plain"
        if kind == "transposed" and len(shape) >= 2:
            src_dims, suffix = dims[:-2] + [dims[-1], dims[-2]], ".transpose(-1, -2)"
        elif kind == "sliced":
            src_dims, suffix = [size_expr(d, mul=2) for d in dims[:1]] + dims[1:], "[::2]"
        elif kind == "expanded" and any(s > 1 for s in shape):
            src_dims = ["1" if (s > 1 and r.random() < 0.5) else d for s, d in zip(shape, dims)]
            suffix = f".expand({', '.join(dims)})"
        elif kind == "offset":
            src_dims, suffix = [size_expr(dims[0], add=1)] + dims[1:], "[1:]"
        else:
            src_dims, suffix = dims, ""
        text = ", ".join(src_dims)
        text = f"({text},)" if len(src_dims) == 1 else f"({text})"
        if dtype.is_floating_point:
            make = f"torch.randn({text}, generator=g, dtype={DTYPE_NAMES[dtype]})"
        elif dtype == torch.bool:
            make = f"torch.randint(0, 2, {text}, generator=g).bool()"
        else:
            make = f"torch.randint(-4, 5, {text}, generator=g)"
        return make + suffix

    def size_variants(self):
        """Per variant 0..VARIANTS-1, the values of the size variables
        (base sizes >= 2): variant 0 is the validated sizes; each later one
        draws sizes from its own stream (the program's stream is left
        alone): mostly 2..7, sometimes 8..40 (past a vector's width, with a
        remainder, for the compiled kernels); per group of equal base sizes
        either one size for the whole group (duck sizing keeps sharing a
        symbol) or one each (the equality breaks)."""
        names = [i for i, v in enumerate(self.base) if v >= 2]
        r = random.Random(f"sizes-{self.seed}")
        table = [tuple(self.base[i] for i in names)]

        def draw():
            return r.randint(2, 7) if r.random() < 0.75 else r.randint(8, 40)
        for _ in range(1, VARIANTS):
            sizes = {}
            for value in sorted({self.base[i] for i in names}):
                group = [i for i in names if self.base[i] == value]
                tied = r.random() < 0.5
                shared = draw()
                for i in group:
                    sizes[i] = shared if tied else draw()
            row = tuple(sizes[i] for i in names)
            if row == table[0] and row:
                row = (row[0] % 7 + 2,) + row[1:]  # not variant 0 again
            table.append(row)
        return names, table

    def generate(self):
        self.helpers_ns = {}
        input_lines, self.params = self.make_inputs()
        maker = self.inputs_source(input_lines)
        ns = {"torch": torch}
        exec(maker, ns)
        self.input_maker = ns["make_inputs"]
        self.state.update(zip(self.params, self.input_maker(self.seed)))
        names, weights = zip(*(self.KINDS + (self.WIDE_KINDS if self.wide else [])))
        # Dynamic mode: some programs open with s_sized's side effects and
        # size-dependent op, then a graph break (a branch on a tensor's
        # value), so that op's graph holds them alone: a later statement
        # that reads a stride or contiguity (print of `.stride()`, `is`
        # checks after `contiguous()`) keeps every size of its trace
        # static, and a static graph never meets the size facts whose
        # failure regressions 31 and 32 are about. Drawn from a stream of
        # its own, so the other programs stay as they were.
        if self.dynamic and self.wide and random.Random(f"sized-first-{self.seed}").random() < SIZED_FIRST:
            state, counter = self.rng.getstate(), self.counter
            if not self.try_stmt(self.s_sized_first):  # no input fits: the program as without it
                self.rng.setstate(state)
                self.counter = counter
        while len(self.body) < self.max_stmts * 1.5 and self.counter < self.max_stmts * 4:
            kind = self.rng.choices(names, weights=weights)[0]
            if not self.tensors():
                kind = "s_op"
            self.try_stmt(getattr(self, kind))
        if self.rng.random() < 0.04:
            raising = self.fill(self.rng.choice(RAISING))
            try:
                self.allowed(raising)
                self.trial(raising + "\n", must_raise=True)
                self.body.append(f"    {raising}")
            except Unfit:
                pass
        return self.render(maker)

    def returns(self):
        r = self.rng
        names = [k for k in self.state if k != "LOG" and k[0] not in "ldu"]
        names += [k for k in self.state if k[0] in "ld" and k != "LOG" and r.random() < 0.3]
        pick = r.sample(names, min(len(names), r.randint(1, 4)))
        if self.wide:  # a MAYBE_SELF result (and its receiver): its identity and layout are compared
            pick += [k for k in dict.fromkeys(self.must_return) if k in self.state and k not in pick]
        if pick and r.random() < 0.1:
            pick.append(pick[0])
        shape = r.random()
        if shape < 0.1 and pick:
            return pick[0]
        if shape < 0.2:
            return "{" + ", ".join(f"'{p}': {p}" for p in pick) + "}"
        if shape < 0.3:
            return "[" + ", ".join(pick) + "]"
        return "(" + "".join(f"{p}, " for p in pick) + ")"

    def inputs_source(self, lines):
        if not self.dynamic:
            return ("def make_inputs(seed):\n    g = torch.Generator().manual_seed(seed)\n" + "\n".join(lines) +
                    f"\n    return [{', '.join(self.params)}]\n")
        names, table = self.size_variants()
        used = [k for k, i in enumerate(names) if re.search(rf"\bn{i}\b", "\n".join(lines))]
        names, table = [names[k] for k in used], [tuple(row[k] for k in used) for row in table]
        sizes = ""
        if names:
            targets = ", ".join(f"n{i}" for i in names) + ("," if len(names) == 1 else "")
            rows = ", ".join("(" + ", ".join(map(str, row)) + ("," if len(row) == 1 else "") + ")" for row in table)
            sizes = f"    {targets} = [{rows}][variant]\n"
        return ("def make_inputs(seed, variant=0):\n    g = torch.Generator().manual_seed(seed)\n" + sizes +
                "\n".join(lines) + f"\n    return [{', '.join(self.params)}]\n")

    def render(self, maker):
        body = self.body or ["    pass"]
        return (f"# tracejit fuzz program, seed {self.seed}\nimport torch\n\nLOG = []\n\n\n" +
                "\n\n".join(self.helpers) + ("\n\n" if self.helpers else "") + maker + "\n\n" +
                f"def fn({', '.join(self.params)}):\n" + "\n".join(body) + f"\n    return {self.returns()}\n")


def generate(seed, max_stmts=None, exclude=(), dynamic=False, wide=True):
    """The program of `seed`, as Python source text; no statement contains
    a substring of `exclude` (to leave out ops with known open defects).
    With `dynamic`, the same program except that make_inputs(seed, variant)
    also makes the inputs at VARIANTS - 1 other sizes (variant 0: the
    program's own, the same tensors as without `dynamic`). `wide=False`:
    the generator of before the widened kinds (the same program for a seed
    as then; old fixed-seed tests replay their programs with it)."""
    return Generator(seed, max_stmts, exclude, dynamic, wide).generate()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    print(generate(int(args[0]) if args else 0, dynamic="--dynamic" in sys.argv, wide="--narrow" not in sys.argv),
          end="")
