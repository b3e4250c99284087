"""scripts/fuzz: runs N generated programs through tests/fuzz/runner.py in
worker subprocesses under build/tracejit, and counts the outcomes.

A worker runs a range of seeds and says `START seed` before each program
and `RESULT {...}` after it (and `SHRINK seed backend` before shrinking a
failure, which restarts the program's clock: shrinking a dynamic-mode
failure on three backends can take longer than --timeout). A worker that
dies (a segfault, an abort) costs the program it was running, counted as
a crash; one that stays on a program past --timeout is killed and the
program counted as a timeout. In
both cases a new worker goes on with the next seed, so nothing stops the
run. The crashing or hanging program is saved to the failure folder,
shrunk by re-running candidates in fresh processes.

With --dynamic, workers run runner.py --dynamic (each program at several
input sizes, compiled with dynamic=True and dynamic=None), and saved
programs carry the header that makes runner.py --check run them so.

Ends with per-backend lines and `N programs: P pass, W wrong, C crash, T
timeout` (a program passes when every backend passes); exits 1 when any
program did not pass.
"""
import argparse
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUNNER = os.path.join(HERE, "runner.py")


class Worker:
    """One runner subprocess over seeds [next_seed, hi)."""

    def __init__(self, args, lo, hi, log_dir):
        self.lo, self.hi = lo, hi
        self.current = None      # the seed being run, and since when
        self.started = 0.0
        self.buffer = b""
        self.stderr_path = os.path.join(log_dir, f"worker-{lo}-{time.monotonic_ns()}.log")
        cmd = [args.launcher, RUNNER, "--worker", "--seeds", f"{lo}:{hi}", "--backend", ",".join(args.backend),
               "--out", args.out, "--shrink-s", str(args.shrink_s)]
        if args.exclude:
            cmd += ["--exclude", ",".join(args.exclude)]
        if args.dynamic:
            cmd += ["--dynamic"]
        if args.narrow:
            cmd += ["--narrow"]
        self.stderr = open(self.stderr_path, "wb")
        for attempt in range(30):  # the launcher may be being relinked
            try:
                self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr,
                                             stdin=subprocess.DEVNULL, start_new_session=True, cwd=ROOT)
                break
            except OSError:
                if attempt == 29:
                    raise
                time.sleep(2)

    def lines(self):
        """Complete lines read so far (non-blocking after select)."""
        chunk = os.read(self.proc.stdout.fileno(), 65536)
        if not chunk:
            return None
        self.buffer += chunk
        *done, self.buffer = self.buffer.split(b"\n")
        return [d.decode(errors="replace") for d in done]

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.close()

    def close(self):
        self.proc.stdout.close()
        self.stderr.close()

    def stderr_tail(self, n=3000):
        with open(self.stderr_path, "rb") as f:
            return f.read()[-n:].decode(errors="replace")


class Tally:
    """Outcomes per program and per backend; prints progress."""

    def __init__(self, args):
        self.args = args
        self.total = args.n
        # "skip": eager hit LibTorch's own internal assert (runner.compare)
        self.programs = {}   # seed -> "pass" | "skip" | "wrong" | "crash" | "timeout"
        self.per_backend = {b: {"pass": 0, "skip": 0, "wrong": 0, "crash": 0, "timeout": 0} for b in args.backend}
        self.kinds = {}      # signature -> count
        self.graphs = self.breaks = 0
        self.seconds = 0.0
        self.last_print = 0.0
        self.last_tenth = 0
        self.failures = []

    def record(self, seed, outcome, per_backend, detail=None):
        self.programs[seed] = outcome
        for b in self.args.backend:
            s = per_backend.get(b, outcome)
            status = "pass" if s == "pass" else s.split(":")[0]
            self.per_backend[b][status] += 1
            if s != "pass":
                self.kinds[f"{b} {s}"] = self.kinds.get(f"{b} {s}", 0) + 1
        if outcome not in ("pass", "skip"):
            self.failures.append((seed, outcome, per_backend, detail))
            print(f"\nseed {seed}: {outcome} {json.dumps(per_backend)}" + (f" -> {detail}" if detail else ""),
                  file=sys.stderr, flush=True)
        self.progress()

    def counts(self):
        c = {"pass": 0, "skip": 0, "wrong": 0, "crash": 0, "timeout": 0}
        for o in self.programs.values():
            c[o] += 1
        return c

    def progress(self, force=False):
        now = time.monotonic()
        done = len(self.programs)
        tty = sys.stderr.isatty()
        if self.args.quiet or (not force and (now - self.last_print < 1.0 if tty else
                                              done * 10 // max(self.total, 1) == self.last_tenth)):
            return
        self.last_print, self.last_tenth = now, done * 10 // max(self.total, 1)
        c = self.counts()
        width = 30
        bar = "#" * (width * done // max(self.total, 1))
        line = (f"[{bar:<{width}}] {done}/{self.total}  pass {c['pass']}  skip {c['skip']}  wrong {c['wrong']}  "
                f"crash {c['crash']}  timeout {c['timeout']}")
        end = "\r" if tty else "\n"
        print(line, end=end, file=sys.stderr, flush=True)


def outcome_of(backends):
    statuses = [s.split(":")[0] for s in backends.values()]
    for worst in ("crash", "timeout", "wrong", "skip"):
        if worst in statuses:
            return worst
    return "pass"


def save_lost(args, seed, kind, stderr_tail):
    """Saves the program of a crash or timeout (regenerated from its seed)
    and a shrunk version, re-running candidates in fresh launchers."""
    sys.path.insert(0, HERE)
    # runner imports tracejit: the launcher's package (build/python beside
    # it), for a driver run by a plain python3.11 without PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(args.launcher)), "python"))
    import gen
    import runner
    src = gen.generate(seed, exclude=args.exclude, dynamic=args.dynamic, wide=not args.narrow)
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"{kind}-s{seed}")
    mode = runner.DYNAMIC_HEADER + "\n" if args.dynamic else ""
    note = "".join(f"# {line}\n" for line in stderr_tail.strip().splitlines()[-15:])
    with open(stem + ".py", "w") as f:
        f.write(f"# {kind} of the worker process (backends {','.join(args.backend)})\n{mode}{note}{src}")
    if args.shrink_s <= 0:
        return stem

    def still_fails(cand):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(cand)
        try:
            r = subprocess.run([args.launcher, RUNNER, "--check", f.name, "--backend", ",".join(args.backend)] +
                               (["--dynamic"] if args.dynamic else []),
                               capture_output=True, timeout=args.timeout, cwd=ROOT)
            return r.returncode < 0 if kind == "crash" else False
        except subprocess.TimeoutExpired:
            return kind == "timeout"
        finally:
            os.unlink(f.name)

    shrunk = runner.shrink(src, still_fails, budget_s=args.shrink_s * 3, max_tries=60)
    with open(stem + ".min.py", "w") as f:
        f.write(f"# {kind} of the worker process (shrunk)\n{mode}{shrunk}")
    return stem


def run(args):
    tally = Tally(args)
    log_dir = tempfile.mkdtemp(prefix="tracejit-fuzz-")
    lo, hi = args.seed, args.seed + args.n
    chunk = max(1, min(args.chunk, -(-args.n // args.jobs)))
    pending = [(s, min(s + chunk, hi)) for s in range(lo, hi, chunk)]
    workers = []
    sel = selectors.DefaultSelector()

    def start(a, b):
        w = Worker(args, a, b, log_dir)
        sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        workers.append(w)

    def retire(w, lost_kind):
        sel.unregister(w.proc.stdout)
        workers.remove(w)
        if lost_kind:
            seed = w.current
            tail = w.stderr_tail()
            w.kill()
            detail = save_lost(args, seed, lost_kind, tail)
            tally.record(seed, lost_kind, {b: lost_kind for b in args.backend}, detail)
            if seed + 1 < w.hi:
                pending.insert(0, (seed + 1, w.hi))
        else:
            w.proc.wait()
            w.close()

    while pending or workers:
        while pending and len(workers) < args.jobs:
            start(*pending.pop(0))
        for key, _ in sel.select(timeout=0.5):
            w = key.data
            lines = w.lines()
            if lines is None:  # EOF: finished, or died
                if w.current is not None:
                    retire(w, "crash")
                else:
                    retire(w, None)
                continue
            for line in lines:
                if line.startswith("START "):
                    w.current, w.started = int(line.split()[1]), time.monotonic()
                elif line.startswith("SHRINK "):  # shrinking gets its own --timeout, not the program's
                    w.started = time.monotonic()
                elif line.startswith("RESULT "):
                    r = json.loads(line[7:])
                    w.current = None
                    if "error" in r:
                        tally.record(r["seed"], "crash", {b: "crash:fuzzer" for b in args.backend},
                                     "the generator or the eager run failed:\n" + r["error"])
                        continue
                    tally.graphs += r.get("graphs", 0) > 0
                    tally.breaks += r.get("breaks", 0) > 0
                    tally.seconds += r.get("s", 0)
                    tally.record(r["seed"], outcome_of(r["backends"]), r["backends"],
                                 ", ".join(r.get("files", [])) or None)
        now = time.monotonic()
        for w in list(workers):
            if w.current is not None and now - w.started > args.timeout:
                retire(w, "timeout")
        tally.progress()
    tally.progress(force=True)
    return tally


def report(args, tally, wall):
    print(file=sys.stderr)
    c = tally.counts()
    n = len(tally.programs)
    print(f"seeds {args.seed}..{args.seed + args.n - 1}, backends {','.join(args.backend)}, "
          f"{wall:.0f} s wall; {tally.graphs} programs compiled a graph, {tally.breaks} had a graph break")
    for b, bc in tally.per_backend.items():
        print(f"  {b}: {n} programs: {bc['pass']} pass, {bc['skip']} skip, {bc['wrong']} wrong, {bc['crash']} crash, "
              f"{bc['timeout']} timeout")
    for k, v in sorted(tally.kinds.items(), key=lambda kv: -kv[1]):
        print(f"    {v:5d}  {k}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seed": args.seed, "n": args.n, "backends": args.backend, "exclude": args.exclude,
                       "dynamic": args.dynamic, "narrow": args.narrow,
                       "counts": c, "per_backend": tally.per_backend, "kinds": tally.kinds,
                       "graphs": tally.graphs, "breaks": tally.breaks, "wall_s": round(wall),
                       "failures": [[s, o, pb] for s, o, pb, _ in tally.failures]}, f, indent=1)
    print(f"{n} programs: {c['pass']} pass, {c['skip']} skipped (eager hit LibTorch's internal assert), "
          f"{c['wrong']} wrong, {c['crash']} crash, {c['timeout']} timeout")
    if args.open_seeds:
        # Seeds of open defects (each also an expected-failure program in
        # failures/): their failure is known, and a pass means the list is stale.
        opened = [s for s in args.open_seeds if tally.programs.get(s, "pass") != "pass"]
        fixed = [s for s in args.open_seeds if tally.programs.get(s) == "pass"]
        unknown = [s for s, o in tally.programs.items() if o not in ("pass", "skip") and s not in args.open_seeds]
        print(f"open seeds: {len(opened)} still failing; passing now (drop them from --open-seeds): {fixed}")
        return 0 if not unknown and not fixed and n == args.n else 1
    return 0 if c["pass"] + c["skip"] == n == args.n else 1


def main():
    ap = argparse.ArgumentParser(prog="scripts/fuzz", description="Differential fuzzing: compiled vs eager.")
    ap.add_argument("n", type=int, help="number of programs")
    ap.add_argument("--backend", default="eager,aot_eager,llvm", type=lambda s: s.split(","),
                    help="comma list of backends (default eager,aot_eager,llvm)")
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: from the clock, printed)")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per program before it counts as a hang")
    ap.add_argument("--out", default=os.path.join(HERE, "failures", "new"), help="where failures are written")
    ap.add_argument("--shrink-s", type=float, default=30, help="shrinking budget per failure in seconds (0: none)")
    ap.add_argument("--exclude", default="", type=lambda s: [x for x in s.split(",") if x],
                    help="comma list of substrings: op templates containing one are not drawn")
    ap.add_argument("--chunk", type=int, default=100, help="seeds per worker process")
    ap.add_argument("--open-seeds", default=[], type=lambda s: [int(x) for x in s.split(",") if x],
                    help="seeds of open defects: their failures do not fail the run, their passing does")
    ap.add_argument("--json", help="also write the summary as JSON here")
    ap.add_argument("--launcher", default=os.path.join(ROOT, os.environ.get("TRACEJIT_BUILD_DIR", "build"), "tracejit"))
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument("--dynamic", action="store_true",
                    help="dynamic shapes: each program at several input sizes, compiled with dynamic=True and None")
    ap.add_argument("--variants", type=int, default=None,
                    help="with --dynamic: input sizes per program (default 6; sets TRACEJIT_FUZZ_VARIANTS, which "
                         "runner.py --check needs again to reproduce a saved failure)")
    ap.add_argument("--narrow", action="store_true",
                    help="the generator of before its widened kinds (dead NaN-derivative ops, clamp/where promotion, "
                         "methods that may return self, size-dependent raising ops, leaves requiring grad in every "
                         "layout): the programs old fixed seeds drew")
    args = ap.parse_args()
    if args.variants:
        os.environ["TRACEJIT_FUZZ_VARIANTS"] = str(args.variants)
    if args.seed is None:
        args.seed = int(time.time()) % 1_000_000 * 1000
    if not os.access(args.launcher, os.X_OK):
        sys.exit(f"scripts/fuzz: no launcher at {args.launcher} (build first: ninja -C build)")
    args.out = os.path.abspath(args.out)
    print(f"fuzzing {args.n} programs from seed {args.seed}, backends {','.join(args.backend)}, "
          f"{args.jobs} jobs" + (", dynamic shapes" if args.dynamic else ""), file=sys.stderr)
    t0 = time.monotonic()
    tally = run(args)
    sys.exit(report(args, tally, time.monotonic() - t0))


if __name__ == "__main__":
    main()
