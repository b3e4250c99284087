"""scripts/bench --models: whole models, eager PyTorch against a tracejit
backend (issue 41's table): torchvision models in inference (batch 8,
224x224, random weights) and our own model programs (tests/models/zoo.py)
in inference and as whole training steps, at 1 and 2 threads.

Each thread count runs in its own process (the launcher), with
OPENBLAS_NUM_THREADS and OMP_NUM_THREADS set to it: LibTorch's OpenBLAS
keeps its own thread pool, which torch.set_num_threads does not limit, so
without it "one thread" eager runs its matmuls on every core (and leaves
that pool spinning into the next contender's time). A second baseline,
eager with ATEN_CPU_CAPABILITY=avx512 (Debian's LibTorch runs its vector
kernels at AVX2 width otherwise), runs in another process, eager only;
skipped on a CPU without AVX-512 (where that eager dies of SIGILL).

Per row: the first call of eager and of the compiled function (the
compile), then eager and compiled timed interleaved in wall-clock time
(two threads make CPU time meaningless), fewer and longer samples than the
micro-benchmarks (a vit_b_16 call takes seconds). ratio = eager /
compiled (> 1 is faster); `avx512` = eager-avx512 / compiled, across
processes.

Each training row also gets its step's peak RSS, eager and compiled,
each measured in a process of its own (memory_child), and `recomp`: the
recompiles while it was timed (a step that recompiles on every call, e.g.
an LR scheduler's new lr, times its compiles), after two warm-up calls
(a training step's second call sees `.grad` set: one more entry).

Usage: scripts/bench --models [--quick] [--threads 1,2] [--only KEY,...]
       [--backend llvm] [--json FILE] [--no-memory]
(the --child form is what this script runs in each process)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TORCHVISION = ["resnet18", "resnet50", "mobilenet_v3_large", "efficientnet_b0", "densenet121", "convnext_tiny",
               "vit_b_16"]
# (key, zoo program, form)
OWN = [("gpt_infer", "gpt", "infer"), ("gpt_train", "gpt", "train"), ("bert_infer", "bert", "infer"),
       ("unet_infer", "unet", "infer"), ("vae_train", "vae", "train"), ("dcgan_train", "dcgan", "train"),
       ("lstm_lm_train", "lstm_lm", "train")]
KEYS = TORCHVISION + [k for k, _, _ in OWN]


# Counters of calls run op by op (tracejit.counters()): the "opbyop" column.
OP_BY_OP_COUNTERS = ("backend_fallbacks", "aot_runs_op_by_op", "sizes_run_op_by_op", "inplace_dense_fallbacks",
                     "inputs_differ_fallbacks", "kernel_input_fallbacks", "onednn_not_finite_refusals")

def parse_args():
    p = argparse.ArgumentParser(prog="scripts/bench --models")
    p.add_argument("--quick", action="store_true", help="fewer samples")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--only", default="", help=f"comma-separated keys of: {', '.join(KEYS)}")
    p.add_argument("--backend", default="llvm", help="the tracejit backend (default llvm)")
    p.add_argument("--json", default="", help="write every number to this file")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--eager-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", default="", help=argparse.SUPPRESS)
    p.add_argument("--memory", default="", help=argparse.SUPPRESS)  # eager|compiled: memory_child
    p.add_argument("--no-memory", action="store_true", help="skip the training rows' peak-RSS processes")
    return p.parse_args()


# ------------------------------------------------------------- the child

def make(key):
    """(run_eager, run_compiled) for one row: each runs one call/step."""
    import torch
    import tracejit
    sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
    from zoo import PROGRAMS
    if key in TORCHVISION:
        import torchvision
        torch.manual_seed(0)
        model = getattr(torchvision.models, key)(weights=None).eval()
        x = torch.randn(8, 3, 224, 224)

        def infer(m, x):
            return m(x)
        return wrap_infer(infer, (model, x))
    _, program, form = next(o for o in OWN if o[0] == key)
    prog = PROGRAMS[program]("bench")
    if form == "infer":
        prog.model.eval()
        return wrap_infer(prog.infer, (prog.model,) + tuple(prog.infer_args))
    eager_state, compiled_state = prog.make_state(), prog.make_state()
    batch = prog.batches[0]

    def eager():
        prog.train_step(eager_state, batch)

    def compiled_run(fn):
        def run():
            fn(compiled_state, batch)
        return run
    return eager, lambda backend: compiled_run(tracejit.compile(prog.train_step, backend=backend))


def wrap_infer(fn, args):
    import torch
    import tracejit

    def eager():
        with torch.no_grad():
            fn(*args)

    def compiled(backend):
        cf = tracejit.compile(fn, backend=backend)

        def run():
            with torch.no_grad():
                cf(*args)
        return run
    return eager, compiled


def timed(run):
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0


def interleaved(a, b, rounds):
    """Median seconds per call of a and b, sampled alternately (the first
    of each round rotated); a sample is >= 0.2 s of calls."""
    per_call = max(timed(a), timed(b))  # warm-up, and the sample length
    n = max(1, int(0.2 / max(per_call, 1e-6)))
    ta, tb, ratios = [], [], []
    for r in range(rounds):
        pair = [(a, ta), (b, tb)] if r % 2 == 0 else [(b, tb), (a, ta)]
        for run, out in pair:
            t0 = time.perf_counter()
            for _ in range(n):
                run()
            out.append((time.perf_counter() - t0) / n)
        ratios.append(ta[-1] / tb[-1])
    return statistics.median(ta), statistics.median(tb), statistics.median(ratios)


def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def memory_child(args):
    """Peak RSS of one training step (issue 41: <= 1.1x eager's), one
    contender per process: after three steps (the compile among them),
    glibc returns its free heap (malloc_trim), the kernel's high-water mark
    is reset (/proc/self/clear_refs 5), one step runs, and the row is the
    peak over the RSS it started from (the model, the optimizer's state and,
    compiled, the program's kept buffers are in that resting RSS, also
    reported)."""
    import ctypes
    import torch
    import tracejit
    torch.set_num_threads(int(args.threads))
    eager, compiled_of = make(args.only)
    run = eager if args.memory == "eager" else compiled_of(args.backend)
    for _ in range(3):
        run()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    rest = rss_kib("VmRSS")
    run()
    peak = rss_kib("VmHWM")
    with open(args.out, "w") as f:
        json.dump({"rest_kib": rest, "peak_kib": peak, "step_kib": max(peak - rest, 0)}, f)
    return 0


def child(args):
    import torch
    import tracejit
    torch.set_num_threads(int(args.threads))
    rounds = 3 if args.quick else 7
    rows = []
    for key in (args.only.split(",") if args.only else KEYS):
        row = {"key": key, "threads": int(args.threads)}
        try:
            eager, compiled_of = make(key)
            row["eager_first_s"] = timed(eager)
            if args.eager_only:
                timed(eager)
                samples = [timed(eager) for _ in range(rounds)]
                row["eager_s"] = statistics.median(samples)
            else:
                before = tracejit.counters()
                compiled = compiled_of(args.backend)
                row["compiled_first_s"] = timed(compiled)
                after = tracejit.counters()
                row["graphs"] = after["graphs_compiled"] - before["graphs_compiled"]
                row["breaks"] = after["graph_breaks"] - before["graph_breaks"]
                timed(compiled)  # a second warm-up: a step's second call sees `.grad` set (one more entry)
                warm = tracejit.counters()
                row["eager_s"], row["compiled_s"], row["ratio"] = interleaved(eager, compiled, rounds)
                end = tracejit.counters()
                row["recompiles"] = end["recompiles"] - warm["recompiles"]
                # timed calls that ran (part of) a graph op by op instead of compiled code: never silent
                row["op_by_op"] = sum(end[k] - warm[k] for k in OP_BY_OP_COUNTERS if k in end)
        except Exception as e:  # a model this build cannot run: the row says why
            row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        rows.append(row)
        print(json.dumps(row), flush=True)
        tracejit.reset()
    with open(args.out, "w") as f:
        json.dump(rows, f)
    return 0


# ------------------------------------------------------------ the parent

def run_child(args, threads, eager_only, env_extra):
    out = tempfile.mktemp(prefix="tracejit_models_", suffix=".json")
    cmd = [os.path.join(ROOT, "build", "tracejit"), os.path.abspath(__file__), "--child", "--threads", str(threads),
           "--backend", args.backend, "--out", out]
    cmd += ["--quick"] if args.quick else []
    cmd += ["--only", args.only] if args.only else []
    cmd += ["--eager-only"] if eager_only else []
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads), **env_extra)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0 or not os.path.exists(out):
        print(f"scripts/bench --models: the {threads}-thread child failed (exit {proc.returncode})", file=sys.stderr)
        return None
    with open(out) as f:
        rows = json.load(f)
    os.unlink(out)
    return {r["key"]: r for r in rows}


def step_memory(args, threads, key):
    """{eager|compiled: memory_child's numbers} for a training row, each
    contender in its own process; None where a process failed."""
    result = {}
    for who in ("eager", "compiled"):
        out = tempfile.mktemp(prefix="tracejit_memory_", suffix=".json")
        cmd = [os.path.join(ROOT, "build", "tracejit"), os.path.abspath(__file__), "--child", "--threads",
               str(threads), "--backend", args.backend, "--out", out, "--only", key, "--memory", who]
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL)
        if proc.returncode != 0 or not os.path.exists(out):
            return None
        with open(out) as f:
            result[who] = json.load(f)
        os.unlink(out)
    return result


def fmt_mib(kib):
    return f"{kib / 1024:.0f} MiB"


def fmt_s(s):
    return "n/a" if s is None else (f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s")


def geomean(values):
    values = [v for v in values if v]
    return statistics.geometric_mean(values) if values else None


def host_has_avx512():
    """Whether this CPU runs AVX-512 (avx512f in /proc/cpuinfo): eager with
    ATEN_CPU_CAPABILITY=avx512 dies of SIGILL on a host without it (an AMD
    EPYC with AVX2 only), so that baseline is skipped there."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx512f" in line for line in f)
    except OSError:
        return False


def parent(args):
    unknown = set(args.only.split(",")) - set(KEYS) if args.only else set()
    if unknown:
        print(f"scripts/bench --models: unknown model(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    results = {}
    print(f"tracejit bench --models: backend {args.backend}, batch 8 for torchvision; wall-clock, interleaved; "
          f"ratio = eager / compiled (>1 is faster), avx512 = eager with ATEN_CPU_CAPABILITY=avx512 / compiled")
    avx512 = host_has_avx512()
    if not avx512:
        print("this CPU has no AVX-512 (no avx512f in /proc/cpuinfo): the avx512 baseline is skipped (n/a)")
    for threads in [int(t) for t in args.threads.split(",")]:
        main = run_child(args, threads, False, {})
        avx = run_child(args, threads, True, {"ATEN_CPU_CAPABILITY": "avx512"}) if avx512 else None
        if main is None:
            return 1
        results[threads] = {"default": main, "avx512": avx or {}}
        print()
        print(f"== {threads} thread(s)")
        print(f"   {'model':20} {'eager':>10} {'compiled':>10} {'ratio':>7} {'avx512':>7} {'graphs':>6} {'breaks':>6} "
              f"{'recomp':>6} {'opbyop':>6} {'eager 1st':>10} {'compiled 1st':>12}")
        infer_r, train_r, infer_a, train_a = [], [], [], []
        for key, r in main.items():
            if "error" in r:
                print(f"   {key:20} error: {r['error']}")
                continue
            a = (avx or {}).get(key, {})
            ra = a["eager_s"] / r["compiled_s"] if "eager_s" in a else None
            (train_r if key.endswith("_train") else infer_r).append(r["ratio"])
            (train_a if key.endswith("_train") else infer_a).append(ra)
            print(f"   {key:20} {fmt_s(r['eager_s']):>10} {fmt_s(r['compiled_s']):>10} {r['ratio']:6.2f}x "
                  f"{(f'{ra:6.2f}x' if ra else 'n/a'):>7} {r['graphs']:>6} {r['breaks']:>6} {r['recompiles']:>6} {r.get('op_by_op', 0):>6} "
                  f"{fmt_s(r['eager_first_s']):>10} {fmt_s(r['compiled_first_s']):>12}")
        memory_rows = [] if args.no_memory else [k for k in main if k.endswith("_train") and "error" not in main[k]]
        if memory_rows:
            print(f"   peak RSS of one training step over the RSS it starts from (issue 41: <= 1.1x eager's), "
                  f"each contender in its own process")
            print(f"   {'model':20} {'eager':>10} {'compiled':>10} {'ratio':>7} {'eager rest':>11} {'compiled rest':>14}")
        for key in memory_rows:
            mem = step_memory(args, threads, key)
            main[key]["memory"] = mem
            if not mem:
                print(f"   {key:20} error: a memory process failed")
                continue
            e, c = mem["eager"], mem["compiled"]
            ratio = c["step_kib"] / e["step_kib"] if e["step_kib"] else float("nan")
            print(f"   {key:20} {fmt_mib(e['step_kib']):>10} {fmt_mib(c['step_kib']):>10} {ratio:6.2f}x "
                  f"{fmt_mib(e['rest_kib']):>11} {fmt_mib(c['rest_kib']):>14}")
        for label, rs, ra in (("inference", infer_r, infer_a), ("training", train_r, train_a)):
            g, ga = geomean(rs), geomean(ra)
            if g:
                print(f"   geomean {label}: {g:.2f}x (avx512 baseline {ga:.2f}x)" if ga else
                      f"   geomean {label}: {g:.2f}x")
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    ARGS = parse_args()
    sys.exit((memory_child(ARGS) if ARGS.memory else child(ARGS)) if ARGS.child else parent(ARGS))
