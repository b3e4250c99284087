"""The fuzzer's runner: runs a program (tests/fuzz/gen.py's output, or a
saved failure) eagerly and under tracejit.compile for each backend, and
says whether the compiled function did exactly what the original did.

Each backend gets a fresh copy of the program (its own `LOG`, helpers and
function objects) and is called twice, on two sets of inputs of the same
shapes and different values (the second call exercises guards and the
cache); each call is compared with the eager call on the same inputs:
  - the result: structure and types, tensor dtypes, shapes, strides (of
    dims longer than 1), requires_grad, values (exact for integer and
    bool, tracejit.same's tolerance per float dtype, NaN equal to NaN);
  - the inputs after the call (in-place mutation, metadata ops on inputs);
  - aliasing: which inputs each output tensor shares storage with (at
    which offset), whether it is the input object itself, which outputs
    share storage with each other;
  - what the call printed, what it appended to LOG (also when it
    raised), and the exception it raised (type and message; only object
    addresses normalized, normalize());
  - after a backward from the result (the sum of every floating output
    requiring grad), each input's `.grad`: None or not, dtype, shape,
    every stride (size-1 dims too), values (NaN equal to NaN); not
    compared when eager's backward raised.
A difference is "wrong"; an exception that eager does not raise is a
"crash". On a failure the program and a shrunk version (statements
dropped while it still fails the same way) are written to the failure
folder.

Run under the launcher:
  build/tracejit tests/fuzz/runner.py --check FILE... [--backend B,...]
      programs in turn; exit 1 on a difference in any (what a regression test runs)
  build/tracejit tests/fuzz/runner.py --worker --seeds A:B [--backend ...] [--out DIR]
      programs of seeds A..B-1, one line per program (scripts/fuzz's worker);
      `SHRINK seed backend` before shrinking a failure
Either with --narrow: the generator of before its widened kinds
(gen.py, wide=False). Either with --dynamic: dynamic shapes. The program is generated with
gen.py's dynamic make_inputs(seed, variant); each backend is compiled
twice, with dynamic=True and with dynamic=None (automatic), and each is
called on DYNAMIC_CALLS (every size variant, then variant 0 again), each
call compared with eager on the same inputs as above. At a variant where
eager raises (statements were validated at variant 0 only), the compiled
call must raise the same type and message. A failure saved in this mode
has DYNAMIC_HEADER in its header, which --check reads.
"""
import argparse
import ast
import contextlib
import io
import json
import linecache
import os
import re
import sys
import time
import traceback
import warnings

import torch
import tracejit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402

DEFAULT_BACKENDS = ["eager", "aot_eager", "llvm"]
TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 1e-2, torch.float32: 1e-3, torch.float64: 1e-6}


# --- running a program ---

def load(src, name):
    """A fresh module namespace of the program `src`. The file name looks
    like a user's file (tracejit leaves `<...>` code alone)."""
    filename = f"{name}.py"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"__name__": name}
    exec(compile(src, filename, "exec"), ns)
    return ns


def storage_ptr(t):
    try:
        return t.storage().data_ptr()
    except Exception:
        return None


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def normalize(text):
    """What must differ between two runs of the same program: object
    addresses (`<function f at 0x7f...>`). Nothing else is normalized."""
    return _ADDRESS.sub("0x?", text)


def backward(out, inputs):
    """Backward from every floating tensor of the result that requires
    grad (the sum of each), as a user's `loss.backward()` would; returns
    None when none does, ("raised", type, message) when backward raised,
    else the `.grad` of every input (None where it has none)."""
    outs = [v for _, v in leaves(out) if isinstance(v, torch.Tensor) and v.requires_grad and v.is_floating_point()]
    if not outs:
        return None
    try:
        torch.autograd.backward([o.sum() for o in outs])
    except Exception as e:  # noqa: BLE001
        return ("raised", type(e).__name__, normalize(str(e)))
    return [x.grad if isinstance(x, torch.Tensor) else None for x in inputs]


def call(fn, ns, input_seed, variant=None):
    """Calls `fn` on the program's inputs of `input_seed` (at the sizes of
    `variant`, a dynamic program's) and returns what the call did: result,
    inputs after, stdout, exception, LOG, and the inputs' gradients after a
    backward from the result (see backward())."""
    inputs = ns["make_inputs"](input_seed) if variant is None else ns["make_inputs"](input_seed, variant)
    ptrs_before = [storage_ptr(x) if isinstance(x, torch.Tensor) else None for x in inputs]
    out, exc, grads = None, None, None
    buf = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(buf):
        warnings.simplefilter("ignore")
        try:
            out = fn(*inputs)
        except Exception as e:  # noqa: BLE001 - the program's own exceptions are data here
            exc = (type(e).__name__, normalize(str(e)), traceback.format_exc())
        log = list(ns["LOG"])
        if exc is None:
            grads = backward(out, inputs)
    return {"out": out, "inputs": inputs, "ptrs_before": ptrs_before, "stdout": normalize(buf.getvalue()),
            "exc": exc, "log": log, "grads": grads}


# --- comparing two calls ---

def leaves(obj, path="out"):
    """(path, value) of every leaf of a nested result."""
    if isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        for i, v in enumerate(obj):
            yield from leaves(v, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaves(v, f"{path}[{k!r}]")
    else:
        yield path, obj


def structure(obj):
    if isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        return (type(obj).__name__, tuple(structure(v) for v in obj))
    if isinstance(obj, dict):
        return ("dict", tuple((k, structure(v)) for k, v in obj.items()))
    return type(obj).__name__


def compare_value(path, ref, res, problems):
    if isinstance(ref, torch.Tensor):
        if ref.dtype != res.dtype:
            problems.append(("dtype", f"{path}: dtype {ref.dtype} vs {res.dtype}"))
            return
        if ref.shape != res.shape:
            problems.append(("shape", f"{path}: shape {tuple(ref.shape)} vs {tuple(res.shape)}"))
            return
        if ref.requires_grad != res.requires_grad:
            problems.append(("requires_grad", f"{path}: requires_grad {ref.requires_grad} vs {res.requires_grad}"))
        strides_ref = [s for s, n in zip(ref.stride(), ref.shape) if n > 1]
        strides_res = [s for s, n in zip(res.stride(), res.shape) if n > 1]
        if ref.numel() > 1 and strides_ref != strides_res:
            problems.append(("stride", f"{path}: strides {ref.stride()} vs {res.stride()} (shape {tuple(ref.shape)})"))
        tol = TOLERANCE.get(ref.dtype, 0)
        if not tracejit.same(ref.detach(), res.detach(), tol=tol, equal_nan=True):
            problems.append(("value", f"{path}: values differ\n  eager:    {ref}\n  compiled: {res}"))
    elif isinstance(ref, float):
        if not tracejit.same(ref, res, tol=1e-3, equal_nan=True):
            problems.append(("value", f"{path}: {ref!r} vs {res!r}"))
    elif isinstance(ref, torch.Size) or not hasattr(ref, "__dict__"):
        if ref != res:
            problems.append(("value", f"{path}: {ref!r} vs {res!r}"))


def compare_grads(ref, res, problems):
    """The inputs' gradients after backward: None or not, dtype, shape,
    every stride (size-1 dims too: AccumulateGrad gives a fresh gradient
    the leaf's strides, and a user may view it), values. Nothing is
    compared when eager's backward raised (the compiled graph may not keep
    what made it raise, e.g. a version counter) or ran on no output (a
    requires_grad difference of the outputs is reported already)."""
    a, b = ref.get("grads"), res.get("grads")
    if a is None or (isinstance(a, tuple) and a[0] == "raised"):
        return
    if b is None:
        return
    if isinstance(b, tuple):
        problems.append(("grad", f"backward raised only compiled: {b[1]}: {b[2]}"))
        return
    for i, (ga, gb) in enumerate(zip(a, b)):
        path = f"x{i}.grad"
        if (ga is None) != (gb is None):
            problems.append(("grad", f"{path}: {'None' if ga is None else 'a tensor'} vs "
                                     f"{'None' if gb is None else 'a tensor'}\n  eager:    {ga}\n  compiled: {gb}"))
        elif ga is not None:
            if ga.dtype != gb.dtype or ga.shape != gb.shape:
                problems.append(("grad", f"{path}: {ga.dtype} {tuple(ga.shape)} vs {gb.dtype} {tuple(gb.shape)}"))
                continue
            if not tracejit.same(ga, gb, tol=TOLERANCE.get(ga.dtype, 0), equal_nan=True):
                problems.append(("grad", f"{path}: values differ\n  eager:    {ga}\n  compiled: {gb}"))
            if ga.numel() > 1 and ga.stride() != gb.stride():
                problems.append(("grad-stride", f"{path}: strides {ga.stride()} vs {gb.stride()} "
                                                f"(shape {tuple(ga.shape)})"))


def alias_map(c):
    """Aliasing facts of a call's result: per output tensor, the inputs it
    shares storage with (and offset) and identity; output-output sharing."""
    inputs = c["inputs"]
    outs = [(p, v) for p, v in leaves(c["out"]) if isinstance(v, torch.Tensor)]
    facts = {}
    for p, v in outs:
        ptr = storage_ptr(v)
        shared = tuple(i for i, x in enumerate(inputs)
                       if isinstance(x, torch.Tensor) and ptr and storage_ptr(x) == ptr)
        ident = tuple(i for i, x in enumerate(inputs) if x is v)
        facts[p] = (shared, ident, v.storage_offset() if shared else None)
    pairs = set()
    for i, (p, v) in enumerate(outs):
        for q, w in outs[i + 1:]:
            if storage_ptr(v) and storage_ptr(v) == storage_ptr(w):
                pairs.add((p, q, v is w))
    return facts, pairs


LIBTORCH_ASSERT = "INTERNAL ASSERT FAILED"


def compare(ref, res):
    """The differences between an eager call and a compiled call, as
    (kind, detail) pairs; kind "crash" when only the compiled one raised."""
    problems = []
    if ref["exc"] is not None and res["exc"] is None and LIBTORCH_ASSERT in ref["exc"][1]:
        # Eager hit a check of LibTorch's own code (a LibTorch bug, "please
        # report a bug to PyTorch": addcmul of a bool and a float in
        # 1.13's Loops.h, seed 9979973): no behaviour to compare with. Not a
        # pass: the program is counted as skipped.
        return [("eager-assert", f"eager hit LibTorch's internal assert ({ref['exc'][1][:200]!r}); compiled returned")]
    if ref["exc"] != res["exc"] and (ref["exc"] is None or res["exc"] is None or ref["exc"][:2] != res["exc"][:2]):
        if ref["exc"] is None:
            return [("crash", f"compiled raised, eager did not:\n{res['exc'][2]}")]
        if res["exc"] is None:
            return [("exception", f"eager raised {ref['exc'][0]}: {ref['exc'][1]}; compiled returned {res['out']!r}")]
        # Both raised, differently: what the call did before raising is
        # compared too (a lost LOG append is a defect of its own).
        problems.append(("exception", f"eager raised {ref['exc'][0]}: {ref['exc'][1]!r}\n"
                                      f"compiled raised {res['exc'][0]}: {res['exc'][1]!r}\n{res['exc'][2]}"))
    if ref["stdout"] != res["stdout"]:
        problems.append(("stdout", f"printed\n  eager:    {ref['stdout']!r}\n  compiled: {res['stdout']!r}"))
    if structure(ref["log"]) != structure(res["log"]):
        problems.append(("log", f"LOG {ref['log']!r} vs {res['log']!r}"))
    else:
        for (p, a), (_, b) in zip(leaves(ref["log"], "LOG"), leaves(res["log"], "LOG")):
            compare_value(p, a, b, problems)
    for i, (a, b) in enumerate(zip(ref["inputs"], res["inputs"])):
        if isinstance(a, torch.Tensor):
            before = len(problems)
            compare_value(f"input x{i}", a, b, problems)
            problems[before:] = [("input-" + k, d) for k, d in problems[before:]]
    if ref["exc"] is not None:
        return problems
    if structure(ref["out"]) != structure(res["out"]):
        problems.append(("structure", f"result structure {structure(ref['out'])} vs {structure(res['out'])}"))
        return problems
    for (p, a), (_, b) in zip(leaves(ref["out"]), leaves(res["out"])):
        compare_value(p, a, b, problems)
    compare_grads(ref, res, problems)
    (fa, pa), (fb, pb) = alias_map(ref), alias_map(res)
    for p in fa:
        if fa[p] != fb.get(p):
            problems.append(("aliasing", f"{p}: (shares storage with inputs, is input, offset) {fa[p]} vs {fb.get(p)}"))
    if pa != pb:
        problems.append(("aliasing", f"outputs sharing storage {sorted(pa)} vs {sorted(pb)}"))
    return problems


INPUT_SEEDS = (11, 12)
# Dynamic mode: (input seed, size variant) of each call, in order: every
# variant once (six calls, past the three captures after which AOT makes a
# size template), then variant 0 again with other values (a hit on the
# first entry after the others). Each backend runs the sequence once per
# DYNAMIC_SETTINGS value, from a fresh compile.
DYNAMIC_CALLS = tuple((11, v) for v in range(gen.VARIANTS)) + ((12, 0),)
DYNAMIC_SETTINGS = (True, None)
# A saved program that needs --dynamic to fail says so in its header.
DYNAMIC_HEADER = "# fuzz mode: --dynamic"


def needs_dynamic(src):
    """Whether `src`'s leading comment lines ask for --dynamic."""
    for line in src.splitlines():
        if not line.startswith("#"):
            return False
        if line.strip() == DYNAMIC_HEADER:
            return True
    return False


def check(src, backends, name="fuzz_program", stats=None, dynamic=False):
    """Runs `src` eagerly and compiled with each backend; returns
    {backend: [(kind, detail), ...]} (empty lists when all agree). With
    `stats` (a dict), stores tracejit.counters() of each backend there.
    With `dynamic`, each backend is compiled once per DYNAMIC_SETTINGS
    value and called on DYNAMIC_CALLS (src's make_inputs takes a variant)."""
    if dynamic:
        return check_dynamic(src, backends, name, stats)
    ns = load(src, name)
    eager = [call(ns["fn"], ns, s) for s in INPUT_SEEDS]
    report = {}
    for backend in backends:
        tracejit.reset()
        ns_b = load(src, name)
        try:
            compiled = tracejit.compile(ns_b["fn"], backend=backend)
        except Exception:  # noqa: BLE001
            report[backend] = [("crash", "tracejit.compile raised:\n" + traceback.format_exc())]
            continue
        problems = []
        for s, ref in zip(INPUT_SEEDS, eager):
            problems += [(k, f"[inputs {s}] {d}") for k, d in compare(ref, call(compiled, ns_b, s))]
        report[backend] = problems
        if stats is not None:
            stats[backend] = tracejit.counters()
    tracejit.reset()
    return report


def check_dynamic(src, backends, name, stats):
    ns = load(src, name)
    eager = [call(ns["fn"], ns, s, v) for s, v in DYNAMIC_CALLS]
    report = {}
    for backend in backends:
        problems = []
        for setting in DYNAMIC_SETTINGS:
            tracejit.reset()
            ns_b = load(src, name)
            try:
                compiled = tracejit.compile(ns_b["fn"], backend=backend, dynamic=setting)
            except Exception:  # noqa: BLE001
                problems.append(("crash", f"[dynamic={setting}] tracejit.compile raised:\n" + traceback.format_exc()))
                continue
            for (s, v), ref in zip(DYNAMIC_CALLS, eager):
                problems += [(k, f"[dynamic={setting}, variant {v}, inputs {s}] {d}")
                             for k, d in compare(ref, call(compiled, ns_b, s, v))]
            if stats is not None:
                merged = stats.setdefault(backend, {})
                for key, value in tracejit.counters().items():
                    if isinstance(value, (int, float)):
                        merged[key] = max(merged.get(key, 0), value)
        report[backend] = problems
    tracejit.reset()
    return report


def signature(problems):
    """What kind of failure: 'crash' or 'wrong:<first kind>' (None: pass)."""
    if not problems:
        return None
    kinds = [k for k, _ in problems]
    if all(k == "eager-assert" for k in kinds):
        return "skip:eager-assert"
    return "crash" if "crash" in kinds else "wrong:" + kinds[0]


# --- shrinking ---

def _bodies(tree):
    """Every statement list inside fn (and the helpers), outermost first."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "make_inputs":
            continue  # the inputs stay as they are (fn's parameters need them)
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], (ast.stmt, ast.excepthandler)):
                yield node, field


def candidates(src):
    """Smaller variants of `src`, biggest cuts first."""
    tree = ast.parse(src)
    n_bodies = len(list(_bodies(tree)))
    for bi in range(n_bodies):
        for si in range(64):
            t = ast.parse(src)
            node, field = list(_bodies(t))[bi]
            block = getattr(node, field)
            if si >= len(block) or (isinstance(node, ast.Module) and isinstance(block[si], ast.Import)):
                break
            stmt = block[si]
            if isinstance(node, ast.Module) and isinstance(stmt, ast.FunctionDef) and stmt.name in ("fn", "make_inputs"):
                continue
            if isinstance(node, ast.Module) and isinstance(stmt, ast.Assign):
                continue
            replacements = [[]]
            if isinstance(stmt, ast.If):
                replacements += [stmt.body, stmt.orelse]
            elif isinstance(stmt, ast.Try):
                replacements += [stmt.body] + [h.body for h in stmt.handlers]
            elif isinstance(stmt, (ast.For, ast.While, ast.With)):
                replacements += [stmt.body]
            elif isinstance(stmt, ast.Return) and isinstance(stmt.value, (ast.Tuple, ast.List, ast.Dict)):
                elts = stmt.value.keys if isinstance(stmt.value, ast.Dict) else stmt.value.elts
                for ei in range(len(elts)):
                    t2 = ast.parse(ast.unparse(t))
                    r = list(_bodies(t2))[bi]
                    v = getattr(r[0], r[1])[si].value
                    if isinstance(v, ast.Dict):
                        del v.keys[ei], v.values[ei]
                    else:
                        del v.elts[ei]
                    yield ast.unparse(t2) + "\n"
                continue
            for rep in replacements:
                t2 = ast.parse(ast.unparse(t))
                r = list(_bodies(t2))[bi]
                blk = getattr(r[0], r[1])
                new = blk[:si] + list(rep) + blk[si + 1:]
                if not new:
                    if r[1] == "handlers":
                        continue
                    new = [ast.Pass()]
                setattr(r[0], r[1], new)
                yield ast.unparse(ast.fix_missing_locations(t2)) + "\n"


def shrink(src, still_fails, budget_s=60, max_tries=400):
    """Drops statements of `src` while `still_fails(candidate)` holds."""
    deadline = time.monotonic() + budget_s
    tries = 0
    changed = True
    while changed and time.monotonic() < deadline and tries < max_tries:
        changed = False
        for cand in candidates(src):
            if time.monotonic() > deadline or tries >= max_tries:
                break
            if len(cand) >= len(src):
                continue
            tries += 1
            if still_fails(cand):
                src, changed = cand, True
                break
    return src


def same_failure(backend, sig, dynamic=False):
    def still_fails(cand):
        try:
            rep = check(cand, [backend], "fuzz_shrink", dynamic=dynamic)
        except Exception:  # noqa: BLE001 - the eager run itself failed: not the same failure
            return False
        return signature(rep[backend]) == sig
    return still_fails


def save_failure(out_dir, seed, backend, src, problems, shrunk=None, dynamic=False):
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, f"{backend}-s{seed}")
    mode = DYNAMIC_HEADER + "\n" if dynamic else ""
    if dynamic and gen.VARIANTS != 6:
        mode += f"# reproduce with TRACEJIT_FUZZ_VARIANTS={gen.VARIANTS} in the environment\n"
    note = "".join(f"# {line}\n" for _, d in problems[:3] for line in d.splitlines()[-12:])
    with open(stem + ".py", "w") as f:
        f.write(f"# {signature(problems)} under backend {backend!r}\n{mode}{note}{src}")
    if shrunk is not None:
        with open(stem + ".min.py", "w") as f:
            f.write(f"# {signature(problems)} under backend {backend!r} (shrunk)\n{mode}{shrunk}")
    return stem


# --- entry points ---

def run_worker(args):
    lo, hi = map(int, args.seeds.split(":"))
    for seed in range(lo, hi):
        print(f"START {seed}", flush=True)
        t0 = time.monotonic()
        try:
            src = gen.generate(seed, exclude=args.exclude, dynamic=args.dynamic, wide=not args.narrow)
            stats = {}
            report = check(src, args.backend, f"fuzz_{seed}", stats, dynamic=args.dynamic)
        except Exception:  # noqa: BLE001 - a generator or eager failure is the fuzzer's bug
            print("RESULT " + json.dumps({"seed": seed, "error": traceback.format_exc()[-2000:]}), flush=True)
            continue
        result = {"seed": seed, "s": round(time.monotonic() - t0, 3), "backends": {},
                  "graphs": max((c.get("graphs_compiled", 0) for c in stats.values()), default=0),
                  "breaks": max((c.get("graph_breaks", 0) for c in stats.values()), default=0)}
        for backend, problems in report.items():
            sig = signature(problems)
            result["backends"][backend] = sig or "pass"
            if sig and not sig.startswith("skip") and args.out:
                if args.shrink_s:
                    print(f"SHRINK {seed} {backend}", flush=True)  # fuzz.py restarts the program's clock
                shrunk = (shrink(src, same_failure(backend, sig, args.dynamic), budget_s=args.shrink_s)
                          if args.shrink_s else None)
                result.setdefault("files", []).append(
                    save_failure(args.out, seed, backend, src, problems, shrunk, args.dynamic))
        print("RESULT " + json.dumps(result), flush=True)


def check_file(path, args):
    """Runs one program file on every backend and prints the outcome; True when all passed."""
    src = open(path).read()
    dynamic = args.dynamic or needs_dynamic(src)
    if dynamic:
        print("mode: dynamic")
    report = check(src, args.backend, os.path.splitext(os.path.basename(path))[0], dynamic=dynamic)
    passed = True
    for backend, problems in report.items():
        print(f"{backend}: {signature(problems) or 'pass'}")
        for kind, detail in problems:
            print(f"  {kind}: {detail}")
        passed = passed and not problems
    return passed


def run_check(args):
    # Several files run one after the other in this process, as a worker runs
    # its seeds (check() resets tracejit for each backend): the test suite
    # pays one launcher start for many programs.
    failed = []
    for path in args.check:
        if len(args.check) > 1:
            print(f"== {os.path.basename(path)}", flush=True)
        if not check_file(path, args):
            failed.append(os.path.basename(path))
    if len(args.check) > 1:
        print(f"{len(args.check) - len(failed)} of {len(args.check)} programs pass"
              + "".join(f"\n  failed: {name}" for name in failed))
    sys.exit(1 if failed else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", nargs="+", help="program files to run and compare, one after the other")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--seeds", default="0:1")
    ap.add_argument("--backend", default=",".join(DEFAULT_BACKENDS), type=lambda s: s.split(","))
    ap.add_argument("--out", default=None, help="failure folder (worker)")
    ap.add_argument("--exclude", default=[], type=lambda s: [x for x in s.split(",") if x],
                    help="comma list of substrings no generated statement may contain")
    ap.add_argument("--shrink-s", type=float, default=60, help="shrink time budget per failure, 0: none")
    ap.add_argument("--dynamic", action="store_true",
                    help="dynamic shapes: compile with dynamic=True and =None, call at several input sizes "
                         "(--check: also when the file's header has '" + DYNAMIC_HEADER + "')")
    ap.add_argument("--narrow", action="store_true",
                    help="the generator of before its widened kinds (gen.py wide=False), to replay old seeds")
    args = ap.parse_args()
    if args.check:
        run_check(args)
    else:
        run_worker(args)


if __name__ == "__main__":
    main()
