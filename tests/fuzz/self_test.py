"""Checks the fuzzer itself, under the launcher: the generator is
deterministic and reaches the features it promises (its dynamic mode
resizes inputs as promised; the widened kinds of round 11: leaves
requiring grad in every layout, dead ops with NaN derivatives, methods
that may return self after in-place ops, clamp/where promotion, side
effects before ops that raise at other sizes, whole exception messages);
the runner catches a wrong value, a wrong exception, a lost input
mutation, a lost gradient and a crash (from custom backends that inject
each), gradients' None-ness, strides and NaNs, identity, LOG lost before
an exception; and the shrinker keeps the failure while dropping what does
not matter.

Usage: build/tracejit tests/fuzz/self_test.py
"""
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402
import runner  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


# --- the generator ---
expect(gen.generate(7) == gen.generate(7), "the same seed gives the same program")
expect(gen.generate(7) != gen.generate(8), "different seeds give different programs")
programs = [gen.generate(s) for s in range(150)]
features = {
    "float32 input": r"x\d = .*float32", "float64 input": r"x\d = .*float64",
    "int64 input": r"x\d = torch\.randint\(-4", "bool input": r"x\d = .*\.bool\(\)",
    "transposed input": r"\.transpose\(-1, -2\)\n", "sliced input": r"\[::2\]\n", "expanded input": r"\.expand\(.*\)\n",
    "in-place op": r"\.\w+_\(", "setitem": r"\] = ", "view op": r"\.(t|transpose|unsqueeze|narrow|select)\(",
    "if on a tensor value": r"if .*(sum|mean|max|any)\(\)", "if on a constant": r"if .*(shape|dtype|dim|is_contiguous)",
    "loop": r"for i in range", "helper call": r"= helper\d+\(", "list glue": r"l\d+ = \[", "dict glue": r"d\d+ = \{",
    "print": r"print\('p'", "caught exception": r"except .* as e:", "returned input": r"return .*\bx\d\b",
    "LOG": r"LOG\.(append|extend)", "python scalar": r"s\d+ = ",
}
# The widened kinds (round 11; tests/regressions/26..33 name the defects
# each one reaches).
features.update({
    "dead op with a NaN/inf derivative": r"\n    u\d+ = .*(rsqrt|log|sqrt|reciprocal|pow|\*\* -|acos|asin|atanh|1 /)",
    "dead op on an input requiring grad": None,  # checked below, on the inputs
    "method that may return self, after an in-place op":
        r"\.(add_|mul_|t_|unsqueeze_|squeeze_|transpose_|copy_|zero_|abs_)\(.*\)\n    v\d+ = \w+\.(contiguous|to|reshape|"
        r"expand_as|type_as|float|double|view_as|flatten)\(",
    "identity of a result observed": r"\bv\d+ is \w+\b",
    "clamp with a tensor bound": r"clamp(_min|_max)?\(\w+, (min=|max=)?[xv]\d+", "where with a scalar branch":
        r"torch\.where\([^\n]*, (-?[\d.]+|True)\)", "side effect before a size-dependent op":
        r"LOG\.append\(.*\)\n    (LOG\.append\(.*\)\n    )?v\d+ = .*(torch\.full\(\(\d|torch\.ones\(\d|view\(\d|narrow\(0, 0, \d)",
    "caught exception's whole message printed": r"print\('caught', type\(e\)\.__name__, str\(e\)\)",
    "two inputs requiring grad": r"requires_grad_\(\)\n    x\d\.requires_grad_\(\)",
})
for name, pattern in features.items():
    if pattern is None:
        continue
    n = sum(bool(re.search(pattern, p)) for p in programs)
    expect(n > 0, f"the generator makes programs with: {name} (found in {n} of 150)")

# Leaves requiring grad in each layout the inputs take (their gradients
# are compared: regressions 26, 28, 29), and dead code reading them.
layouts = {"expanded": 0, "non-contiguous": 0, "size-1 dim": 0, "dead code reads it": 0}
for p in programs:
    ns = runner.load(p, "self_test_prog")
    for i, x in enumerate(ns["make_inputs"](11)):
        if isinstance(x, torch.Tensor) and x.requires_grad:
            layouts["expanded"] += 0 in x.stride() and x.numel() > 1
            layouts["non-contiguous"] += not x.is_contiguous()
            layouts["size-1 dim"] += 1 in x.shape and x.numel() > 1
            layouts["dead code reads it"] += bool(re.search(rf"\n    u\d+ = .*\bx{i}\b", p))
for name, n in layouts.items():
    expect(n > 0, f"the generator makes inputs requiring grad: {name} (found {n} in 150 programs)")
# Under --dynamic, some programs raise only at other sizes than the
# validated ones, after appending to LOG (regressions 31, 32).
late = 0
for s in range(150):
    if "LOG.append" not in programs[s]:
        continue
    ns = runner.load(gen.generate(s, dynamic=True), "self_test_dyn")
    calls = [runner.call(ns["fn"], ns, 11, v) for v in range(gen.VARIANTS)]
    late += calls[0]["exc"] is None and any(c["exc"] and c["log"] for c in calls[1:])
expect(late > 0, f"dynamic programs raise at other sizes after a LOG append ({late} of 150)")
narrow = [gen.generate(s, wide=False) for s in range(40)]
expect(narrow != programs[:40] and all("\n    u" not in p for p in narrow), "wide=False: the generator of before")
for p in programs[:40]:
    ns = runner.load(p, "self_test_prog")
    runner.call(ns["fn"], ns, 11)  # every program runs eagerly (its exceptions are recorded, not raised)
expect(all("resize_as_" not in p for p in programs), "no op with uninitialized results")
excluded = [gen.generate(s, exclude=["requires_grad", "_("]) for s in range(40)]
expect(all("requires_grad" not in p and "_(" not in p.split("def fn")[1] for p in excluded), "--exclude leaves ops out")

# Dynamic mode: the same program but for make_inputs, whose variant 0 is
# the program's own inputs; later variants change sizes >= 2 only, and
# sometimes keep and sometimes break an equality between two sizes.
def without_inputs(p):
    return p[:p.index("def make_inputs")] + p[p.index("\ndef fn("):]


def sizes(inputs):
    return [tuple(x.shape) for x in inputs if isinstance(x, torch.Tensor)]


# (Without the opening that only dynamic programs get: gen.SIZED_FIRST.)
sized_first = gen.SIZED_FIRST
gen.SIZED_FIRST = 0
dynamic = [gen.generate(s, dynamic=True) for s in range(60)]
gen.SIZED_FIRST = sized_first
expect(all(without_inputs(d) == without_inputs(p) for d, p in zip(dynamic, programs)),
       "a dynamic program is the same program but for make_inputs")
# With it, some dynamic programs open with side effects, an op that raises at
# other sizes (mostly `where`) and a graph break, the rest as without it
# (regressions 31, 32: a graph traced with dynamic sizes that raises later).
opened = [s for s in range(60) if gen.generate(s, dynamic=True) != dynamic[s]]
expect(len(opened) >= 5 and all(re.search(r"def fn\(.*\):\n(.*\n){1,6}    if \w+\.sum\(\) > 0:\n        LOG\.append\('pos'\)",
                                          gen.generate(s, dynamic=True)) for s in opened),
       f"dynamic programs open with a size-dependent op and a graph break ({len(opened)} of 60)")
grown = kept_equal = broke_equal = 0
for d, p in zip(dynamic, programs):
    ns_d, ns_p = runner.load(d, "self_test_dyn"), runner.load(p, "self_test_prog")
    base = ns_p["make_inputs"](11)
    expect(all(torch.equal(a, b) and a.stride() == b.stride() for a, b in zip(ns_d["make_inputs"](11, 0), base)
               if isinstance(a, torch.Tensor)), "variant 0 makes the program's own inputs")
    for v in range(1, gen.VARIANTS):
        for before, after in zip(sizes(base), sizes(ns_d["make_inputs"](11, v))):
            expect(len(before) == len(after) and all(a == b for a, b in zip(before, after) if b < 2),
                   f"a variant keeps the rank and the sizes 0 and 1: {before} -> {after}")
            grown += before != after
            pairs = [(i, j) for i in range(len(before)) for j in range(i + 1, len(before)) if before[i] == before[j] >= 2]
            kept_equal += any(after[i] == after[j] for i, j in pairs)
            broke_equal += any(after[i] != after[j] for i, j in pairs)
expect(grown and kept_equal and broke_equal,
       f"variants change sizes ({grown}), keep equal sizes equal ({kept_equal}) and break equalities ({broke_equal})")


# --- the runner, against injected bugs ---
PROGRAM = '''import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((3, 4), generator=g), torch.randn((4,), generator=g)]

def fn(x0, x1):
    v1 = torch.relu(x0) + x1
    v2 = v1.sum(0)
    v3 = torch.sin(x1)
    x0.mul_(2)
    s4 = v3.shape[0]
    print('p', s4)
    return (v2, v1)
'''


def off_by_one(gm, example_inputs):
    def run(*args):
        return [o + 1 if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in gm(*args)]
    return run


def raising(gm, example_inputs):
    def run(*args):
        raise IndexError("injected")
    return run


def no_mutation(gm, example_inputs):
    def run(*args):
        return gm(*[a.clone() for a in args])
    return run


def cut_grad(gm, example_inputs):
    """Outputs equal to the right ones but new leaves: backward reaches no input."""
    def run(*args):
        return [o.detach().requires_grad_(o.requires_grad) if isinstance(o, torch.Tensor) else o for o in gm(*args)]
    return run


report = runner.check(PROGRAM, ["eager", off_by_one, raising, no_mutation])
expect(report["eager"] == [], f"the eager backend passes the sample program: {report['eager']}")
expect(runner.signature(report[off_by_one]) == "wrong:value", f"a wrong value is caught: {report[off_by_one]}")
expect(runner.signature(report[raising]) == "crash", f"an exception eager does not raise is a crash: {report[raising]}")
expect(any(k == "input-value" for k, _ in report[no_mutation]), f"a lost input mutation is caught: {report[no_mutation]}")

GRAD_PROGRAM = '''import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((3, 1), generator=g).expand(3, 4)
    x0.requires_grad_()
    return [x0]

def fn(x0):
    return (x0 * 2).sum(1)
'''
report = runner.check(GRAD_PROGRAM, ["eager", cut_grad])
expect(report["eager"] == [], f"the eager backend passes the gradient program: {report['eager']}")
expect(any(k == "grad" for k, _ in report[cut_grad]), f"a lost gradient is caught: {report[cut_grad]}")

dyn_program = PROGRAM.replace("def make_inputs(seed):", "def make_inputs(seed, variant=0):").replace(
    "(3, 4)", "(3 + variant, 4)")
report = runner.check(dyn_program, ["eager", off_by_one], dynamic=True)
expect(report["eager"] == [], f"dynamic mode: the eager backend passes the sample program: {report['eager']}")
expect(runner.signature(report[off_by_one]) == "wrong:value" and any("variant 5" in d for _, d in report[off_by_one]),
       f"dynamic mode: a wrong value is caught at every variant: {report[off_by_one]}")
expect(runner.needs_dynamic("# wrong:value under backend 'llvm'\n" + runner.DYNAMIC_HEADER + "\n" + dyn_program)
       and not runner.needs_dynamic(PROGRAM), "a saved dynamic failure's header asks for --dynamic")

shrunk = runner.shrink(PROGRAM, runner.same_failure(off_by_one, "wrong:value"), budget_s=60)
expect(len(shrunk) < len(PROGRAM) and "sin" not in shrunk and "print" not in shrunk,
       f"the shrinker drops what does not matter:\n{shrunk}")
expect(runner.signature(runner.check(shrunk, [off_by_one])[off_by_one]) == "wrong:value", "the shrunk program still fails")

# The comparison itself: strides, aliasing, exceptions.
ref = {"out": torch.ones(2, 3), "inputs": [], "ptrs_before": [], "stdout": "", "exc": None, "log": []}
res = dict(ref, out=torch.ones(3, 2).t())
expect([k for k, _ in runner.compare(ref, res)] == ["stride"], "different strides are caught")
x = torch.ones(3)
ref_alias = dict(ref, inputs=[x], out=x[1:])
res_alias = dict(ref, inputs=[x], out=x[1:].clone())
expect("aliasing" in [k for k, _ in runner.compare(ref_alias, res_alias)], "a lost alias of an input is caught")
ref_exc = dict(ref, exc=("IndexError", "boom", ""))
res_exc = dict(ref, exc=("RuntimeError", "boom", ""))
expect([k for k, _ in runner.compare(ref_exc, res_exc)] == ["exception"], "a different exception type is caught")
ref_assert = dict(ref, exc=("RuntimeError", "!needs_dynamic_casting<func_t>::check(iter) INTERNAL ASSERT FAILED", ""))
expect(runner.signature(runner.compare(ref_assert, ref)) == "skip:eager-assert",
       "eager's LibTorch internal assert (compiled returned) is a skip, not a pass")
expect(runner.signature(runner.compare(ref_assert, res_exc)) == "wrong:exception",
       "another exception than eager's LibTorch internal assert is caught")
res_msg = dict(ref, exc=("IndexError", "prefix: boom", ""))
expect([k for k, _ in runner.compare(ref_exc, res_msg)] == ["exception"], "a different exception message is caught")

# Gradients: None or not, strides (size-1 dims too), values (NaN too).
ref_g = dict(ref, out=None, inputs=[x], grads=[torch.ones(5, 1)])
res_g = dict(ref_g, grads=[None])
expect([k for k, _ in runner.compare(ref_g, res_g)] == ["grad"], "a gradient that should be there is caught")
expect([k for k, _ in runner.compare(dict(ref_g, grads=[None]), dict(ref_g, grads=[torch.zeros(5, 1)]))] == ["grad"],
       "a gradient that should be None (an input only dead code reads) is caught")
expect([k for k, _ in runner.compare(ref_g, dict(ref_g, grads=[torch.ones(1, 5).t()]))] == ["grad-stride"],
       "a gradient's stride of a size-1 dim is caught")
expect([k for k, _ in runner.compare(ref_g, dict(ref_g, grads=[torch.full((5, 1), float("nan"))]))] == ["grad"],
       "a NaN gradient (a dead op's derivative) is caught")
expect(runner.compare(dict(ref_g, grads=("raised", "RuntimeError", "x")), res_g) == [],
       "no gradient comparison when eager's backward raised")
expect([k for k, _ in runner.compare(ref_g, dict(ref_g, grads=("raised", "RuntimeError", "x")))] == ["grad"],
       "a backward that raises only compiled is caught")
# Identity of a result that may be its input (`contiguous`, `to`, ...).
expect("aliasing" in [k for k, _ in runner.compare(dict(ref, inputs=[x], out=(x,)), dict(ref, inputs=[x], out=(x[:],)))],
       "a view returned for the input object itself is caught")
# Side effects before an exception, and exception messages (only object
# addresses normalized).
ref_log = dict(ref, exc=("RuntimeError", "boom", ""), log=["x"])
expect([k for k, _ in runner.compare(ref_log, dict(ref_log, log=[]))] == ["log"],
       "a LOG append lost before an exception is caught")
expect([k for k, _ in runner.compare(ref_log, dict(ref_log, log=[], exc=("RuntimeError", "('boom',)", "")))] ==
       ["exception", "log"], "a changed message and a lost LOG append are both reported")
expect(runner.normalize("<function f at 0x7f3a2b1c4d50>") == runner.normalize("<function f at 0x7f00aa001122>")
       and runner.normalize("size (2) vs (3)") != runner.normalize("size (2,) vs (3,)"),
       "messages: addresses normalized, nothing else")

# tracejit.same (API.md), which the comparison uses for values.
import tracejit  # noqa: E402
a = torch.tensor([1.0, 2.0])
expect(tracejit.same(a, a + 1e-6) and not tracejit.same(a, a + 1e-2), "same: float tolerance")
expect(tracejit.same(a, a + 1e-2, tol=0.1), "same: tol=")
expect(not tracejit.same(a, a.double()) and tracejit.same(a, a.double(), exact_dtype=False), "same: exact_dtype")
expect(not tracejit.same(torch.tensor([1, 2]), torch.tensor([1, 3])), "same: integers exactly")
nan = torch.tensor([float("nan")])
expect(not tracejit.same(nan, nan) and tracejit.same(nan, nan, equal_nan=True), "same: equal_nan")
expect(tracejit.same({"k": [a, 1.0, (2, "s")]}, {"k": [a.clone(), 1.0, (2, "s")]}), "same: nested structures")
expect(not tracejit.same([a], [a, a]) and not tracejit.same({"k": a}, {"j": a}), "same: structure mismatch")
exact = torch.tensor([1.0, 2.0], dtype=torch.float64)
ref, res = torch.tensor([1.01, 2.0]), torch.tensor([1.005, 2.0])
expect(not tracejit.same(ref, res) and tracejit.same(ref, res, exact), "same: fp64_ref forgives eager's own error")
expect(tracejit.same(a, a * 1.0001, cos_similarity=True), "same: cos_similarity")

if failures:
    print(f"{len(failures)} checks failed")
    sys.exit(1)
print("fuzzer self test: all checks passed")
