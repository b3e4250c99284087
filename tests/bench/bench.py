"""scripts/bench: eager PyTorch against every tracejit backend, in one
process, single-threaded; the goals of issues 9 and 12 next to the numbers
they are about; plus the tracer's and AOT's own costs.

Per workload (workloads.py), the contenders are eager PyTorch, each
backend's compiled function, and two identical twins (eager PyTorch again,
and a second, separately compiled aot_eager): all are timed interleaved
(measure.py) and the twins (and a backend that says it runs another's
engine, with that one) must agree within SELF_CHECK_LIMIT, otherwise the
method is broken and the bench exits 1. See docs/benchmarks.md.

Usage (under the launcher): bench.py [--quick] [--self-check-only]
  [--only KEY,...] [--backends NAME,...] [--json FILE] [--wall]
  [--glibc-default-malloc] [--debug-skew-twin FACTOR]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import types

import torch

import _tracejit
import tracejit
from measure import Contender, Settings, deviation, measure, paired_ratio, steady_malloc
from workloads import MiB, workloads

SELF_CHECK_LIMIT = 0.10
SELF_CHECK_RETRIES = 2
CPU_ONLY_SKIP = {"nvrtc": "a CUDA backend; these workloads are CPU tensors"}


def parse_args():
    p = argparse.ArgumentParser(prog="scripts/bench")
    p.add_argument("--quick", action="store_true", help="fewer, shorter samples")
    p.add_argument("--self-check-only", action="store_true", help="only the workloads the self-check needs")
    p.add_argument("--only", default="", help="comma-separated workload keys; `costs` for the tracer's and AOT's costs")
    p.add_argument("--backends", default="", help="comma-separated backends (default: every CPU backend)")
    p.add_argument("--json", default="", help="write every number to this file")
    p.add_argument("--wall", action="store_true", help="time wall-clock instead of process CPU time")
    p.add_argument("--glibc-default-malloc", action="store_true",
                   help="leave glibc's heap trimming on (reproduces the page-fault artefact)")
    p.add_argument("--debug-skew-twin", type=int, default=1, metavar="FACTOR",
                   help="make each twin do FACTOR times the work (a test that the self-check can fail)")
    return p.parse_args()


ARGS = parse_args()
SETTINGS = Settings(ARGS.quick, ARGS.wall)
torch.set_num_threads(1)
MALLOC_NOTE = "glibc malloc defaults (trimming on)" if ARGS.glibc_default_malloc else steady_malloc()


def backends():
    known = _tracejit.known_backends()
    if ARGS.backends:
        return ARGS.backends.split(",")
    order = ["eager", "aot_eager", "llvm"]
    return [b for b in order if b in known] + [b for b in known if b not in order and b not in CPU_ONLY_SKIP]


def same_engine_backends():
    """{backend: the backend whose engine it runs}, from what `tracejit
    --version` says of each backend (e.g. "llvm backend: ... until the LLVM
    code generator lands it runs aot_eager's engine"); such a pair is one
    more identical pair for the self-check, until the backend gets its own."""
    try:
        exe = os.readlink("/proc/self/exe")
        text = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    pairs = re.findall(r"^(\w+) backend: .*runs (\w+)'s engine", text, re.M)
    return {b: same for b, same in pairs if b != same}


SAME_ENGINE = same_engine_backends()


def fresh_copy(fn):
    """The same function with its own code object, so that its compiled
    entries are its own (entries hang off the code object: two backends
    on one code would each pay the other's guard check)."""
    return types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def runner(fn, args, mode, params, repeat=1):
    """run(n): n calls of fn in the workload's mode; `repeat` > 1 only for
    --debug-skew-twin."""
    reps = max(1, repeat)

    if mode == "infer":
        def run(n):
            with torch.no_grad():
                for _ in range(n * reps):
                    fn(*args)
    elif mode == "train":
        def run(n):
            for _ in range(n * reps):
                for p in params:
                    p.grad = None
                fn(*args).backward()
    else:
        def run(n):
            for _ in range(n * reps):
                fn(*args)
    return run


def fmt_time(s):
    if s is None:
        return "n/a"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_ms(ms):
    return "n/a" if ms is None else f"{ms:.1f} ms"


# ---------------------------------------------------------------- copy_

def copy_bandwidth():
    """Bytes per second of copy_ between two 2^22-float32 tensors."""
    src, dst = torch.randn(1 << 22), torch.empty(1 << 22)
    c = Contender("copy_", lambda n: [dst.copy_(src) for _ in range(n)])
    measure([c], SETTINGS)
    return 2 * src.numel() * src.element_size() / c.median(), c.median()


# ------------------------------------------------------------- compile

def first_minus_steady(run, steady_calls):
    clock = SETTINGS.clock
    t0 = clock()
    run(1)
    first = clock() - t0
    steady = []
    for _ in range(steady_calls):
        t0 = clock()
        run(1)
        steady.append(clock() - t0)
    return (first - statistics.median(steady)) * 1e3, statistics.median(steady)


def compile_latency(fn, args, mode, params, backend, heavy):
    """Cold: a fresh compile's first call minus a steady call (median of 3
    unless a call is slow), each with an empty kernel disk cache (a new
    XDG_CACHE_HOME, which tracejit.reset() reads again). Cached: the same
    after one more tracejit.reset() with that directory kept, only when the
    counters say every kernel came from the disk cache."""
    repeats = 1 if heavy or ARGS.quick else 3
    colds = []
    saved_home = os.environ.get("XDG_CACHE_HOME")
    for _ in range(repeats):
        os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="tracejit_bench_cache_")
        tracejit.reset()
        run = runner(tracejit.compile(fresh_copy(fn), backend=backend), args, mode, params)
        ms, steady = first_minus_steady(run, 2 if heavy else 5)
        colds.append(ms)
    cached, note = None, "no kernel cache (no kernel_cache_hits counter)"
    if "kernel_cache_hits" in tracejit.counters():
        tracejit.reset()
        run = runner(tracejit.compile(fresh_copy(fn), backend=backend), args, mode, params)
        ms, _ = first_minus_steady(run, 2 if heavy else 5)
        counters = tracejit.counters()
        if counters["kernel_cache_hits"] > 0 and counters.get("kernels_compiled", 0) == 0:
            cached, note = ms, "every kernel from the disk cache"
        else:
            note = f"kernel cache not used ({counters['kernel_cache_hits']} hits, {counters.get('kernels_compiled')} compiled)"
    if saved_home is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = saved_home
    tracejit.reset()
    return {"cold_ms": statistics.median(colds), "cached_ms": cached, "cached_note": note}


SAVED_RE = re.compile(r"partition: (\d+) saved tensor\(s\), (\d+) bytes \((\d+) without recomputation, "
                      r"(\d+) with it; (\d+) node")


def saved_bytes():
    """The last AOT partition's saved bytes: as partitioned, without the
    recomputation rule and with it (the partitioner reports all three; it
    applies the rule only for backends that fuse pointwise ops)."""
    m = SAVED_RE.search(_tracejit._last_aot_summary())
    if not m:
        return None
    n, actual, off, on, recomputed = map(int, m.groups())
    return {"saved_tensors": n, "bytes_saved": actual, "bytes_recompute_on": on, "bytes_recompute_off": off,
            "recomputed_nodes": recomputed}


# ------------------------------------------------------------ workload

def twin_backend(names):
    return "aot_eager" if "aot_eager" in names else (names[0] if names else None)


def run_workload(w, names, bandwidth):
    try:
        fn, args, params = w.make()
    except ImportError as e:
        return {"key": w.key, "title": w.title, "skipped": f"{type(e).__name__}: {e}"}
    eager_run = runner(fn, args, w.mode, params)
    t0 = time.perf_counter()
    eager_run(1)  # eager's own first call (lazy init) before anything is timed
    eager_run(1)
    heavy = time.perf_counter() - t0 > 0.2

    compile_info = {b: compile_latency(fn, args, w.mode, params, b, heavy) for b in names}

    tracejit.reset()
    contenders = [Contender("eager PyTorch", eager_run)]
    if w.twins:
        contenders.append(Contender("eager PyTorch (twin)", runner(fn, args, w.mode, params, ARGS.debug_skew_twin),
                                    twin_of="eager PyTorch"))
    saved = None
    for b in names:
        run = runner(tracejit.compile(fresh_copy(fn), backend=b), args, w.mode, params)
        run(1)  # compiles
        if b == "aot_eager" and w.mode == "train":
            saved = saved_bytes()
        same = SAME_ENGINE.get(b)
        contenders.append(Contender(b, run, twin_of=same if same in names else None))
    tb = twin_backend(names)
    if w.twins and tb:
        run = runner(tracejit.compile(fresh_copy(fn), backend=tb), args, w.mode, params, ARGS.debug_skew_twin)
        run(1)
        contenders.append(Contender(f"{tb} (twin)", run, twin_of=tb))

    measure(contenders, SETTINGS)
    eager_t = contenders[0].median()
    copy_bound = w.bytes_moved(args) / bandwidth if w.bytes_moved else None
    result = {"key": w.key, "title": w.title, "mode": w.mode, "eager_s": eager_t,
              "bytes_moved": w.bytes_moved(args) if w.bytes_moved else None,
              "copy_bound_s": copy_bound, "compile": compile_info, "saved": saved, "contenders": {}}
    for c in contenders:
        ratio = paired_ratio(contenders[0], c)
        result["contenders"][c.name] = {
            "time_s": eager_t / ratio, "median_s": c.median(), "spread": c.spread(), "samples_s": c.samples,
            "calls_per_sample": c.number, "ratio": ratio, "faults_per_call": c.faults_per_call(),
            "x_copy_bound": eager_t / ratio / copy_bound if copy_bound else None}
    by_name = {c.name: c for c in contenders}
    result["self_check"] = [settle_pair(by_name[c.twin_of], c) for c in contenders if c.twin_of]
    result["goals"] = [goal_result(g, result) for g in w.goals if g.backend in result["contenders"]]
    return result


def settle_pair(a, b):
    """The self-check of identical contenders a and b. A pair over the limit
    is measured again by itself, up to SELF_CHECK_RETRIES times, and passes
    if a later measurement is within it: a burst of load on the host
    disturbs one measurement, a real difference (a twin doing more work)
    shows in every one."""
    first = d = deviation(a, b)
    tries = 0
    while d >= SELF_CHECK_LIMIT and tries < SELF_CHECK_RETRIES:
        tries += 1
        pair = [Contender(a.name, a.run), Contender(b.name, b.run, twin_of=a.name)]
        measure(pair, SETTINGS)
        d = deviation(*pair)
    return {"a": a.name, "b": b.name, "deviation": d, "ok": d < SELF_CHECK_LIMIT,
            "remeasured": tries, "first_deviation": first}


def goal_result(g, result):
    c = result["contenders"][g.backend]
    got = {"ratio": c["ratio"], "copy": c["x_copy_bound"],
           "cold_ms": result["compile"][g.backend]["cold_ms"],
           "cached_ms": result["compile"][g.backend]["cached_ms"]}[g.what]
    met = g.met(got)
    return {"backend": g.backend, "what": g.what, "goal": g.text(), "issue": g.issue, "got": got,
            "status": "n/a" if met is None else ("met" if met else "MISS")}


def goal_got_text(g):
    if g["got"] is None:
        return "n/a"
    if g["what"] in ("ms", "us"):
        return f"{g['got']:.2f} {g['what']}"
    return f"{g['got']:.1f} ms" if g["what"].endswith("_ms") else f"{g['got']:.2f}x"


def print_workload(r):
    if "skipped" in r:
        print(f"== {r['key']}: {r['title']}: skipped ({r['skipped']})")
        return
    head = f"== {r['key']}: {r['title']}"
    if r["copy_bound_s"]:
        head += f" (memory-bound: {r['bytes_moved'] / MiB:.0f} MiB moved, copy bound {fmt_time(r['copy_bound_s'])})"
    print(head)
    print(f"   {'contender':22} {'time/call':>10} {'IQR':>4} {'ratio':>7} {'x copy':>7} {'faults/call':>11} "
          f"{'compile cold':>12} {'cached':>9}  goals")
    for name, c in r["contenders"].items():
        comp = r["compile"].get(name)
        goals = "; ".join(f"{g['goal']} {g['status']}" for g in r["goals"] if g["backend"] == name)
        xcopy = f"{c['x_copy_bound']:.2f}x" if c["x_copy_bound"] else "-"
        print(f"   {name:22} {fmt_time(c['time_s']):>10} {c['spread'] * 100:3.0f}% {c['ratio']:6.2f}x {xcopy:>7} {c['faults_per_call']:11.0f} "
              f"{fmt_ms(comp['cold_ms']) if comp else '':>12} {fmt_ms(comp['cached_ms']) if comp else '':>9}  {goals}")
    if r["saved"]:
        s = r["saved"]
        print(f"   saved for backward (aot_eager): {s['bytes_saved']} bytes ({s['saved_tensors']} tensors, "
              f"{s['recomputed_nodes']} nodes recomputed); the recompute rule, used by fusing backends: "
              f"{s['bytes_recompute_on']} bytes, {s['bytes_recompute_off']} without it")
    for s in r["self_check"]:
        again = (f" after {s['remeasured']} more measurement(s) of the pair (first {s['first_deviation'] * 100:.1f}%)"
                 if s["remeasured"] else "")
        print(f"   self-check: {s['b']} vs {s['a']}: {s['deviation'] * 100:.1f}% "
              f"({'ok' if s['ok'] else 'FAIL'}, limit {SELF_CHECK_LIMIT * 100:.0f}%){again}")


def print_goals(goals):
    print()
    print("goals (issues 12 and 9; the tracer's: issues 4, 6 and 10); ratio = eager / backend, >1 is faster")
    for g in goals:
        print(f"  {g['key']:12} {g['backend']:10} {g['what']:9} {goal_got_text(g):>9}  "
              f"goal {g['goal']:16} (issue {g['issue']:>2})  {g['status']}")


# --------------------------------------------------- tracer and AOT costs

def interleaved_pair(a_name, a_run, b_name, b_run):
    a, b = Contender(a_name, a_run), Contender(b_name, b_run)
    measure([a, b], SETTINGS)
    return a.median(), b.median()


def calls(fn, *args):
    def run(n):
        for _ in range(n):
            fn(*args)
    return run


def median_first_call_ms(fn, backend, args, repeat):
    times = []
    for _ in range(repeat):
        tracejit.reset()
        compiled = tracejit.compile(fresh_copy(fn), backend=backend)
        times.append(first_minus_steady(calls(compiled, *args), 1)[0])
    return statistics.median(times)


def twenty_ops(a, b, c, d):
    x = (a + b) * c - d
    x = (x.sin() + a) * 2.0
    x = x.cos() - b
    x = x.exp() * c + 1.0
    x = x.tanh() - d
    x = (x * a).relu() + b
    x = x.sigmoid() * 3.0 - c
    return x + d


def unrolled200(x):
    for i in range(200):
        x = x + i
    return x


def tiny4(a, b, c, d):
    return a + b + c + d


def fifty_ops(x, w):
    for _ in range(10):
        x = (x @ w).sin() * 0.5 + x.tanh() - 0.1
    return x.sum()


class Layer(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = torch.nn.Linear(d, d)
        self.act = torch.nn.GELU()

    def forward(self, x):
        return self.act(self.lin(x)) + x


class Stack(torch.nn.Module):
    def __init__(self, depth, d):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Layer(d) for _ in range(depth)])
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.norm(x)


def cost_goal(goals, key, backend, got, limit, unit, issue):
    """Records a goal `got < limit` of the costs section; returns its status."""
    status = "met" if got < limit else "MISS"
    goals.append({"key": key, "backend": backend, "what": unit, "goal": f"<{limit:g} {unit}", "issue": issue,
                  "got": got, "status": status})
    return status


def costs():
    """The tracer's and AOT's own costs (numbers, goals)."""
    repeat = 5 if ARGS.quick else 15
    out, goals = {}, []
    print()
    print("tracer costs (eager backend)")
    args16 = tuple(torch.randn(16) for _ in range(4))
    ops = tracejit.explain(twenty_ops)(*args16).op_count
    ms = median_first_call_ms(twenty_ops, "eager", args16, repeat)
    out["trace_compile_20ops_ms"] = ms
    print(f"  trace + compile, {ops}-op function: {ms:.2f} ms (median; goal < 5 ms) "
          f"{cost_goal(goals, 'trace_20ops', 'eager', ms, 5, 'ms', 4)}")

    tracejit.reset()
    args4 = tuple(torch.randn(8) for _ in range(4))
    f4 = fresh_copy(tiny4)
    compiled = tracejit.compile(f4, backend="eager")
    compiled(*args4)
    (code,) = _tracejit._cache_entries(f4)
    graph_fn = next(c for c in code.co_consts if type(c).__name__ == "CompiledGraph")
    t_call, t_graph = interleaved_pair("compiled", calls(compiled, *args4), "graph", calls(graph_fn, *args4))
    over = (t_call - t_graph) * 1e6
    out.update(cache_hit_call_us=t_call * 1e6, cache_hit_graph_us=t_graph * 1e6, cache_hit_overhead_us=over)
    print(f"  cache hit, 4 tensor inputs: {t_call * 1e6:.2f} us per call, graph alone {t_graph * 1e6:.2f} us, "
          f"overhead {over:.2f} us (goal < 3 us) {cost_goal(goals, 'cache_hit', 'eager', over, 3, 'us', 4)}, "
          f"(goal < 2 us) {cost_goal(goals, 'hit_tight', 'eager', over, 2, 'us', 10)}")

    # Tracing alone (no compile), per 1,000 instructions the tracer steps through.
    x8 = torch.randn(8)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        traced = _tracejit._trace_for_test(unrolled200, (x8,))
        samples.append(time.perf_counter() - start)
    per_k = statistics.median(samples) * 1e3 / traced["instructions"] * 1000
    out["trace_ms_per_1000_instructions"] = per_k
    print(f"  trace, 200-iteration unrolled loop ({traced['instructions']} instructions, {traced['op_count']} ops): "
          f"{per_k:.3f} ms per 1,000 instructions (median; goal < 2 ms) "
          f"{cost_goal(goals, 'trace_1k', 'eager', per_k, 2, 'ms', 10)}")

    mlp24 = Stack(24, 32).eval()
    xin = torch.randn(4, 32)

    def stack_forward(x):
        return mlp24(x)
    ms = median_first_call_ms(stack_forward, "eager", (xin,), max(3, repeat // 3))
    ex = tracejit.explain(stack_forward)(xin)
    out["trace_compile_mlp24_ms"] = ms
    print(f"  trace + compile, 24-layer MLP of nested modules ({ex.graph_count} graph, {ex.op_count} ops): "
          f"{ms:.2f} ms (median; goal < 50 ms) {cost_goal(goals, 'trace_mlp24', 'eager', ms, 50, 'ms', 6)}")

    print()
    print("AOT (aot_eager: functionalization, joint graph + partition with grad)")
    xa = torch.randn(8, 16, requires_grad=True)
    wa = torch.randn(16, 16, requires_grad=True)
    nodes = tracejit.explain(fifty_ops)(xa, wa).op_count
    aot_times, eager_times = [], []
    for _ in range(repeat):  # alternated, so drift hits both
        aot_times.append(median_first_call_ms(fifty_ops, "aot_eager", (xa, wa), 1))
        eager_times.append(median_first_call_ms(fifty_ops, "eager", (xa, wa), 1))
    aot_ms = statistics.median(aot_times) - statistics.median(eager_times)
    out["aot_compile_share_ms"] = aot_ms
    print(f"  AOT's share of the compile of a {nodes}-node forward graph with grad: {aot_ms:.2f} ms "
          f"(goal < 5 ms) {cost_goal(goals, 'aot_compile', 'aot_eager', aot_ms, 5, 'ms', 9)}")

    tracejit.reset()
    tiny_eager = tracejit.compile(fresh_copy(tiny4), backend="eager")
    tiny_aot = tracejit.compile(fresh_copy(tiny4), backend="aot_eager")
    tiny_eager(*args4)
    tiny_aot(*args4)
    t_a, t_e = interleaved_pair("aot_eager", calls(tiny_aot, *args4), "eager", calls(tiny_eager, *args4))
    wrap = (t_a - t_e) * 1e6
    out.update(wrapper_aot_us=t_a * 1e6, wrapper_eager_us=t_e * 1e6, wrapper_overhead_us=wrap)
    print(f"  runtime wrapper, 4 inputs: aot_eager {t_a * 1e6:.2f} us vs the same graph unwrapped (eager) "
          f"{t_e * 1e6:.2f} us: {wrap:+.2f} us per call (goal < 2 us) "
          f"{cost_goal(goals, 'aot_wrapper', 'aot_eager', wrap, 2, 'us', 9)}")
    print("  training steps under aot_eager and saved bytes: see train_mlp and train_cnn above")
    return out, goals


# ----------------------------------------------------------------- main

def main():
    names = backends()
    unknown = set(names) - set(_tracejit.known_backends())
    if unknown:
        print(f"scripts/bench: unknown backend(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    selected = workloads()
    if ARGS.self_check_only:
        selected = [w for w in selected if w.core]
    if ARGS.only:
        keys = ARGS.only.split(",")
        unknown = set(keys) - {w.key for w in selected} - {"costs"}
        if unknown:
            print(f"scripts/bench: unknown workload(s): {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        selected = [w for w in selected if w.key in keys]
    for b in names:  # one-time initialisation of each backend, before anything is timed
        tracejit.compile(fresh_copy(tiny4), backend=b)(*(torch.randn(4) for _ in range(4)))

    bandwidth, copy_t = copy_bandwidth()
    print(f"tracejit bench: torch {torch.__version__}, {torch.get_num_threads()} thread, "
          f"{' '.join(_tracejit.version_lines())}")
    print(f"method: contenders interleaved round-robin, median of >= {SETTINGS.min_samples} samples of "
          f">= {SETTINGS.min_sample_s * 1e3:.0f} ms of {SETTINGS.clock_name}; {MALLOC_NOTE}")
    same = [f"{b} runs {o}'s engine" for b, o in SAME_ENGINE.items() if b in names and o in names]
    print(f"backends: {', '.join(names)}"
          + (f" ({', '.join(same)}: one more identical pair for the self-check)" if same else "")
          + "".join(f"; {b} skipped ({why})" for b, why in CPU_ONLY_SKIP.items() if b not in names))
    print(f"copy_ of 2^22 float32: {fmt_time(copy_t)}, {bandwidth / 1e9:.2f} GB/s (read + write)")
    print("ratio = eager PyTorch / contender (>1 is faster), the median of per-round ratios; time/call = eager's median / ratio;\n"
          "IQR = interquartile range / median of a contender's own samples; x copy = time / (bytes moved / copy_ bandwidth)")
    print()

    results = []
    for w in selected:
        r = run_workload(w, names, bandwidth)
        print_workload(r)
        results.append(r)
        sys.stdout.flush()
    run_costs = not ARGS.self_check_only and (not ARGS.only or "costs" in ARGS.only.split(","))
    extra, cost_goals = costs() if run_costs else ({}, [])
    goals = [dict(g, key=r["key"]) for r in results for g in r.get("goals", [])] + cost_goals
    print_goals(goals)

    checks = [s for r in results for s in r.get("self_check", [])]
    failed = [s for s in checks if not s["ok"]]
    worst = max((s["deviation"] for s in checks), default=0.0)
    print()
    # Only the costs ran (`--only costs`): they compare no backends, so there
    # is no pair to check and nothing to fail.
    costs_only = not results and run_costs
    if costs_only:
        print("self-check: none (only the costs ran; they compare no backends)")
    elif not checks:
        print("self-check: FAIL (no workload ran identical contenders)")
    elif failed:
        print(f"self-check: FAIL ({len(failed)} of {len(checks)} identical pairs differ by more than "
              f"{SELF_CHECK_LIMIT * 100:.0f}%; worst {worst * 100:.1f}%): the ratios above are not trustworthy")
    else:
        print(f"self-check: ok ({len(checks)} identical pairs, worst {worst * 100:.1f}%, limit {SELF_CHECK_LIMIT * 100:.0f}%)")

    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump({"torch": torch.__version__, "versions": _tracejit.version_lines(), "backends": names,
                       "quick": ARGS.quick, "malloc": MALLOC_NOTE, "copy_bandwidth_Bps": bandwidth,
                       "min_samples": SETTINGS.min_samples, "min_sample_s": SETTINGS.min_sample_s,
                       "workloads": results, "costs": extra, "goals": goals,
                       "self_check": {"ok": costs_only or (bool(checks) and not failed), "worst": worst,
                                      "limit": SELF_CHECK_LIMIT}}, f, indent=1)
    return 0 if costs_only or (checks and not failed) else 1


if __name__ == "__main__":
    sys.exit(main())
