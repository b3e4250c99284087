"""The debugging tools' repro flow (API.md "Debugging tools"; the seeds'
`wrap_compiler_debug`, `save_graph_repro`, `dump_to_minify`).

With `config.repro_after` set, `tracejit.compile` hands a registered
backend's graphs to `debug_backend(name)` instead: it compiles them through
`_tracejit.compile_graph` without falling back, and on a compile or run
failure (or, at `repro_level` 4, an accuracy failure against eager) writes
`repro_dir/repro.py`, at level >= 2 also `minified_repro.py`, then raises
`BackendCompilerFailed` naming the file. At level 3 every graph is written to
`repro_dir/checkpoints/` before it is compiled, so a crash leaves it behind.

A repro script holds the graph as text (`GraphModule.text`), its inputs as
(sizes, strides, dtype, requires_grad) made with a fixed seed, the backend,
the stage ("dynamo": the captured graph through the whole pipeline; "aot":
the functional graph handed to the backend, taken from
`_tracejit._last_backend_failure`) and the config it needs. Run under
`build/tracejit` it exits 1 while the failure persists and 0 once it is
gone; `minify` shrinks it (each step checked in a subprocess, so a crashing
backend cannot kill the minifier), `analyze` checks determinism, stores
every intermediate and names the first that diverges from eager, `get_args`
prints the inputs. With `config.repro_save_inputs` the scripts carry the
real input values through a content-addressed store (repro_dir/storages).
Level 4's accuracy check compares outputs and, when they require grad,
input gradients (`same_two_models`) on the first call's real inputs.
"""
import os
import re
import subprocess
import sys
import time

import _tracejit as _C

from ._config import config
from ._same import same, same_two_models

# ------------------------------------------------------------- the check


def make_inputs(specs, seed=0):
    """The inputs a spec list describes: (sizes, strides, dtype, requires_grad)
    filled from a seeded generator, or with a fifth item (a saved storage,
    see `store_tensor`) the real values; inputs saved from one storage share
    it again."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    loaded = {}
    out = []
    for spec in specs:
        sizes, strides, dtype_name, requires_grad = spec[:4]
        dtype = getattr(torch, dtype_name)
        if len(spec) > 4:
            t = _load_tensor(spec[4], sizes, strides, dtype, loaded)
        else:
            t = torch.empty_strided(tuple(sizes), tuple(strides), dtype=dtype)
            if dtype == torch.bool:
                t.copy_(torch.rand(t.shape, generator=gen) > 0.5)
            elif dtype.is_floating_point or dtype.is_complex:
                t.copy_(torch.randn(t.shape, generator=gen))
            else:
                t.copy_(torch.randint(-4, 5, t.shape, generator=gen))
        out.append(t.requires_grad_(requires_grad) if dtype.is_floating_point else t)
    return out

# ------------------------------------------------------- the content store
# Like the seeds' `write_tensor`: a tensor is saved as its whole storage,
# named by the SHA-1 of its bytes (identical storages are stored once), plus
# its view (sizes, strides, offset) in the spec.


def store_tensor(t, directory):
    """Saves `t`'s storage under `directory`; the spec's fifth item."""
    import hashlib

    import torch

    t = t.detach()
    storage = t.storage()
    base = torch.empty(0, dtype=t.dtype).set_(storage, 0, (storage.size(),), (1,))
    data = base.view(torch.uint8).numpy().tobytes() if base.numel() else b""
    digest = hashlib.sha1(data).hexdigest()
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(os.path.abspath(directory), digest + ".bin")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    return {"file": path, "offset": t.storage_offset(), "elements": storage.size()}


def _load_tensor(saved, sizes, strides, dtype, loaded):
    import torch

    base = loaded.get(saved["file"])
    if base is None:
        with open(saved["file"], "rb") as f:
            data = bytearray(f.read())
        raw = torch.frombuffer(data, dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
        base = loaded[saved["file"]] = raw.view(dtype) if data else torch.empty(0, dtype=dtype)
    return base.as_strided(tuple(sizes), tuple(strides), saved["offset"])


def _clones(args):
    return [a.detach().clone().requires_grad_(a.requires_grad) for a in args]


def _fp64(args):
    import torch

    return [a.detach().double().requires_grad_(a.requires_grad) if a.is_floating_point() else a.detach()
            for a in args]


def check(text, specs, backend, stage, tol, args=None):
    """The failure the graph shows with this backend ("compile error: ...",
    "run error: ...", "accuracy: ..."), or None. Outputs that require grad
    are also compared through backward (same_two_models). `args`: the
    inputs to use instead of the ones `specs` makes."""
    gm = _C.GraphModule.from_text(text)
    if args is None:
        args = make_inputs(specs)
    if stage == "aot":  # AOT's graphs take no autograd inputs: backward is in its own graph
        args = [a.detach() for a in args]
    try:
        gm(*_clones(args))
    except Exception:  # the graph itself fails: nothing to blame on the backend
        return None
    try:
        compiled = _C.compile_graph(gm, backend, _clones(args), stage)
    except Exception as e:  # noqa: BLE001
        return f"compile error: {type(e).__name__}: {e}".splitlines()[0]
    try:
        differs = same_two_models(gm, compiled, args, gm, _fp64(args), tol=tol)
    except Exception as e:  # noqa: BLE001
        return f"run error: {type(e).__name__}: {e}".splitlines()[0]
    if differs:
        return f"accuracy: the backend's {differs} differ from eager's"
    return None


def failure_kind(failure):
    return failure.split(":", 1)[0] if failure else None

# ------------------------------------------------------------- the script


SCRIPT = '''\
# tracejit repro ({reason})
# Run with: build/tracejit {name} [run|minify|analyze|get_args]
# Exits 1 while the failure persists, 0 once it is gone.
#
# The graph as Python (ATen calls), for reading; the script runs GRAPH,
# the same graph in tracejit's text form:
{python}
import sys

import tracejit
from tracejit._repro import repro_main

GRAPH = {graph!r}
INPUTS = {inputs!r}
BACKEND = {backend!r}
STAGE = {stage!r}
CONFIG = {config!r}

if __name__ == "__main__":
    sys.exit(repro_main(GRAPH, INPUTS, BACKEND, STAGE, CONFIG, sys.argv[1:], __file__))
'''

# The config a repro needs to fail the same way (the injected bug included).
_REPRO_CONFIG = ("debug_inject_bug", "repro_tolerance")


def write_repro(path, text, specs, backend, stage, reason, cfg=None):
    if cfg is None:
        cfg = {k: getattr(config, k) for k in _REPRO_CONFIG}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    source = SCRIPT.format(reason=reason.replace("\n", " "), name=os.path.basename(path), graph=text,
                           python=_python_comment(text),
                           inputs=[tuple(s) for s in specs], backend=backend, stage=stage, config=cfg)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(source)
    os.replace(tmp, path)  # never half a file
    return path


def _python_comment(text):
    try:
        code = _C.GraphModule.from_text(text).code
    except Exception as e:  # noqa: BLE001 - the script still works without it
        code = f"(no Python form: {type(e).__name__}: {e})"
    return "\n".join("#   " + line if line.strip() else "#" for line in code.strip().splitlines())


def repro_main(text, specs, backend, stage, cfg, argv, path):
    for key, value in cfg.items():
        setattr(config, key, value)
    command = argv[0] if argv else "run"
    if command == "get_args":
        for i, spec in enumerate(specs):
            saved = f" saved={spec[4]['file']}@{spec[4]['offset']}" if len(spec) > 4 else " random (seed 0)"
            print(f"input {i}: sizes={spec[0]} strides={spec[1]} dtype={spec[2]} requires_grad={spec[3]}{saved}")
        return 0
    if command == "minify":
        out = os.path.join(os.path.dirname(os.path.abspath(path)), "minified_repro.py")
        result = minify(text, specs, backend, stage, cfg, out, budget_s=float(config.repro_minify_budget_s))
        print(f"tracejit repro: minified to {result}" if result else "tracejit repro: nothing to minify (no failure)")
        return 0 if result else 1
    if command == "analyze":
        return analyze(text, specs, backend, stage, cfg.get("repro_tolerance", config.repro_tolerance),
                       os.path.join(os.path.dirname(os.path.abspath(path)), "analyze"))
    if command != "run":
        print(f"tracejit repro: unknown command {command!r} (run, minify, analyze, get_args)", file=sys.stderr)
        return 2
    failure = check(text, specs, backend, stage, cfg.get("repro_tolerance", config.repro_tolerance))
    if failure:
        print(f"tracejit repro: FAIL {failure}")
        return 1
    print("tracejit repro: no failure")
    return 0

# ------------------------------------------------------------- the minifier

_NODE = re.compile(r"^    %(\w+) : (.*?) = (placeholder|get_attr|call_function)\[(.*)$")
_SHORT_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16", "i64": "int64",
                 "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "b8": "bool"}


class _Graph:
    """The graph text as node lines, enough to cut it (not a parser)."""

    def __init__(self, text, specs):
        lines = text.splitlines()
        self.head, self.nodes, self.ret, self.tail = [], [], None, []
        specs = list(specs)
        for line in lines:
            m = _NODE.match(line)
            if self.ret is not None:
                self.tail.append(line)
            elif m:
                name, meta, kind, rest = m.groups()
                spec = specs.pop(0) if kind == "placeholder" else None
                self.nodes.append({"name": name, "meta": meta, "kind": kind, "line": line, "spec": spec,
                                   "refs": set(re.findall(r"%(\w+)", rest.split(" loc(")[0]))})
            elif line.strip().startswith("return"):
                self.ret = line
            else:
                self.head.append(line)

    def copy(self):
        g = _Graph.__new__(_Graph)
        g.head, g.ret, g.tail = list(self.head), self.ret, list(self.tail)
        g.nodes = [dict(n) for n in self.nodes]
        return g

    def calls(self):
        return [n["name"] for n in self.nodes if n["kind"] == "call_function"]

    def output_refs(self):
        return set(re.findall(r"%(\w+)", self.ret))

    def dce(self):
        live = self.output_refs()
        kept = []
        for n in reversed(self.nodes):
            if n["name"] in live or n["kind"] == "get_attr":
                kept.append(n)
                live |= n["refs"]
        self.nodes = list(reversed(kept))
        return self

    def make_output(self, name):
        self.ret = f"    return (%{name},)"
        return self.dce()

    def make_input(self, name, saved=None):
        """Node `name` becomes an input: random values of its meta, or the
        value it had in the original graph when `saved` (name -> spec) has it."""
        node = next(n for n in self.nodes if n["name"] == name)
        spec = (saved or {}).get(name) or _spec_of(node["meta"])
        if spec is None:
            return None
        self.nodes.remove(node)
        last = max((i for i, n in enumerate(self.nodes) if n["kind"] == "placeholder"), default=-1)
        self.nodes.insert(last + 1, {"name": name, "meta": node["meta"], "kind": "placeholder", "spec": spec,
                                     "line": f"    %{name} : {node['meta']} = placeholder[target={name}]",
                                     "refs": set()})
        return self.dce()

    def text(self):
        return "\n".join(self.head + [n["line"] for n in self.nodes] + [self.ret] + self.tail) + "\n"

    def specs(self):
        return [n["spec"] for n in self.nodes if n["kind"] == "placeholder"]


def _spec_of(meta):
    m = re.match(r"^(\w+)\[([\d, ]*)\](\{.*\})?$", meta.strip())
    if not m or m.group(1) not in _SHORT_DTYPES:
        return None
    sizes = [int(s) for s in m.group(2).split(",") if s.strip()]
    extra = m.group(3) or ""
    st = re.search(r"stride=\[([\d, ]*)\]", extra)
    if st:
        strides = [int(s) for s in st.group(1).split(",") if s.strip()]
    else:
        strides, acc = [], 1
        for size in reversed(sizes):
            strides.insert(0, acc)
            acc *= max(size, 1)
    return (sizes, strides, _SHORT_DTYPES[m.group(1)], "grad" in extra)


def _launcher():
    return os.readlink("/proc/self/exe")


_WORKER = "from tracejit._repro import _candidate_worker; _candidate_worker()"
_REPLY = "tracejit candidate: "


def _candidate_worker():
    """The minifier's candidate process: the config as the first line, then
    one candidate (graph text and input specs, JSON) a line; answers each
    with its failure (`check`) or "" on a `_REPLY` line."""
    import json

    cfg = json.loads(sys.stdin.readline())
    for key, value in cfg.items():
        setattr(config, key, value)
    tol = cfg.get("repro_tolerance", config.repro_tolerance)
    for line in sys.stdin:
        text, specs, backend, stage = json.loads(line)
        try:
            failure = check(text, specs, backend, stage, tol)
        except Exception:  # noqa: BLE001 - a candidate that cannot even be built fails nothing
            failure = None
        sys.stdout.write(_REPLY + json.dumps(failure or "") + "\n")
        sys.stdout.flush()


class _Candidates:
    """Checks the minifier's candidates in one launcher process, one after
    another, instead of one launcher each: a launcher's start (LibTorch's
    initialization, `import torch`: ~2.5 s of CPU) was most of a candidate's
    cost. A candidate that kills the process is a crash, one that outlives
    the deadline a timeout (the process is killed); either way the next
    candidate starts a fresh process, so a crashing backend still cannot
    take the minifier down, and no candidate sees a broken process."""

    def __init__(self, backend, stage, cfg):
        self.backend, self.stage, self.cfg = backend, stage, cfg
        self.proc = None
        self.pending = b""

    def _start(self):
        import json

        self.proc = subprocess.Popen([_launcher(), "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.pending = b""
        self.proc.stdin.write((json.dumps(self.cfg) + "\n").encode())

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def _reply(self, deadline):
        """The worker's answer, or the reason there is none ("crash", "timeout", "exited")."""
        import select

        fd = self.proc.stdout.fileno()
        while True:
            lines = self.pending.split(b"\n")
            for i, line in enumerate(lines[:-1]):
                at = line.find(_REPLY.encode())  # after whatever the candidate printed itself
                if at >= 0:
                    self.pending = b"\n".join(lines[i + 1:])
                    return "reply", line[at + len(_REPLY):].decode()
            self.pending = lines[-1]
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 1 << 16) if ready else None
            if chunk is None:
                return "timeout", None
            if not chunk:
                return ("crash" if self.proc.wait() < 0 else "exited"), None
            self.pending += chunk

    def failure_kind(self, graph, deadline):
        """The candidate's kind of failure ("crash" when it killed the
        process), or None (no failure, or no answer before the deadline)."""
        import json

        if time.monotonic() > deadline:
            return None
        if self.proc is None:
            self._start()
        try:
            self.proc.stdin.write((json.dumps([graph.text(), graph.specs(), self.backend, self.stage]) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        # as long as the budget lasts, and at least 5 s: a candidate is never cut short at once
        how, reply = self._reply(max(deadline, time.monotonic() + 5.0))
        if how != "reply":
            self.close()
            return "crash" if how == "crash" else None
        return failure_kind(json.loads(reply))


def _fails_like(candidates, graph, kind, deadline):
    """Does the candidate fail with the same kind (checked in the worker process)?"""
    return candidates.failure_kind(graph, deadline) == kind


def minify(text, specs, backend, stage, cfg, out_path, budget_s=300.0, log=print):
    """Delta debugging over the graph; writes `out_path`, returns it (None when nothing fails)."""
    candidates = _Candidates(backend, stage, cfg)
    try:
        return _minify(candidates, text, specs, backend, stage, cfg, out_path, time.monotonic() + budget_s, log)
    finally:
        candidates.close()


def _minify(candidates, text, specs, backend, stage, cfg, out_path, deadline, log):
    failure = check(text, specs, backend, stage, cfg.get("repro_tolerance", config.repro_tolerance))
    kind = failure_kind(failure) or "crash"
    best = _Graph(text, specs)
    if not _fails_like(candidates, best, kind, deadline):
        return None
    log(f"tracejit minifier: {len(best.calls())} nodes, failure: {failure or 'crash'}")
    saved = _saved_intermediates(best, out_path) if any(len(spec) > 4 for spec in specs) else {}

    def accept(candidate, what):
        nonlocal best
        if candidate is not None and len(candidate.calls()) < len(best.calls()) and \
                _fails_like(candidates, candidate, kind, deadline):
            best = candidate
            log(f"tracejit minifier: {what}: {len(best.calls())} nodes")
            return True
        return False

    # 1. The earliest node whose value, returned alone, still fails (bisection).
    calls = best.calls()
    lo, hi = 0, len(calls) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _fails_like(candidates, best.copy().make_output(calls[mid]), kind, deadline):
            hi = mid
        else:
            lo = mid + 1
    if calls:
        accept(best.copy().make_output(calls[lo]), f"returning {calls[lo]}")
    # 2. Nodes turned into inputs: all but the last, then halves, then one by one.
    changed = True
    while changed and time.monotonic() < deadline:
        changed = False
        upstream = best.calls()[:-1]
        chunks = [upstream] + [upstream[i::2] for i in range(2)] + [[n] for n in upstream]
        for chunk in chunks:
            if not chunk:
                continue
            candidate = best.copy()
            for name in chunk:
                if candidate is not None and any(n["name"] == name for n in candidate.nodes):
                    candidate = candidate.make_input(name, saved)
            if accept(candidate, f"{len(chunk)} node(s) made inputs"):
                changed = True
                break
    # 3. Constants shrunk to 1 (or 1.0) one at a time, where the failure stays.
    for index, node in enumerate(list(best.nodes)):
        for candidate in _with_constants_shrunk(best, index):
            if time.monotonic() > deadline:
                break
            if _fails_like(candidates, candidate, kind, deadline):
                best = candidate
                log(f"tracejit minifier: a constant of %{node['name']} shrunk")
    write_repro(out_path, best.text(), best.specs(), backend, stage, f"minified: {failure or 'crash'}", cfg)
    log(f"tracejit minifier: wrote {out_path} ({len(best.calls())} nodes)")
    return out_path

_CONSTANT = re.compile(r"(?<=[(\[,] )-?\d+(\.\d*)?(e-?\d+)?(?=[,)\]])|(?<=\()-?\d+(\.\d*)?(e-?\d+)?(?=[,)])")


def _with_constants_shrunk(graph, index):
    """Copies of `graph` with one numeric argument of node `index` replaced
    by 1 (1.0 for a float), each candidate separately."""
    node = graph.nodes[index]
    if node["kind"] != "call_function":
        return
    args, _, loc = node["line"].partition(" loc(")
    for m in _CONSTANT.finditer(args):
        text = m.group(0)
        small = "1.0" if any(ch in text for ch in ".e") else "1"
        if text in (small, "0", "0.0", "1", "1.0"):
            continue
        candidate = graph.copy()
        line = args[:m.start()] + small + args[m.end():] + (" loc(" + loc if loc else "")
        candidate.nodes[index] = dict(candidate.nodes[index], line=line)
        yield candidate


def _saved_intermediates(graph, out_path):
    """With saved inputs, every node's value in the original graph, stored
    beside `out_path`, as specs for the nodes the minifier makes inputs."""
    names = [n["name"] for n in graph.nodes if n["kind"] == "call_function" and _spec_of(n["meta"])]
    whole = graph.copy()
    whole.ret = "    return (" + ", ".join(f"%{n}" for n in names) + ",)"
    try:
        values = _C.GraphModule.from_text(whole.text())(*make_inputs(graph.specs()))
    except Exception:  # noqa: BLE001 - random values then
        return {}
    store = os.path.join(os.path.dirname(os.path.abspath(out_path)), "storages")
    saved = {}
    for name, value in zip(names, values):
        if hasattr(value, "stride"):
            saved[name] = (list(value.shape), list(value.stride()), str(value.dtype).replace("torch.", ""), False,
                           store_tensor(value, store))
    return saved

# ------------------------------------------------------------- analyze


def analyze(text, specs, backend, stage, tol, out_dir=None):
    """Runs the graph with every single-tensor node returned, compiled
    (twice: determinism) and eagerly, and names the first node whose value
    diverges beyond `tol`, with its source line. With `out_dir`, every
    intermediate of both runs goes to the content store there, listed in
    `out_dir/index.txt`. Returns 1 if a value diverges or is not
    deterministic."""
    graph = _Graph(text, specs)
    names = [n["name"] for n in graph.nodes if n["kind"] == "call_function" and _spec_of(n["meta"])]
    graph.ret = "    return (" + ", ".join(f"%{n}" for n in names) + ",)"
    gm = _C.GraphModule.from_text(graph.text())
    args = make_inputs(graph.specs())
    ref = gm(*_clones(args))
    try:
        compiled = _C.compile_graph(gm, backend, _clones(args), stage)
        first, second = compiled(*_clones(args)), compiled(*_clones(args))
    except Exception as e:  # noqa: BLE001
        print(f"tracejit analyze: the graph with every value returned fails: {type(e).__name__}: {e}")
        return 1
    import torch

    if out_dir:
        _store_intermediates(out_dir, graph, names, ref, first)
    nondeterministic = [n for n, a, b in zip(names, first, second) if not torch.equal(a, b)]
    print("tracejit analyze: deterministic" if not nondeterministic else
          f"tracejit analyze: NOT deterministic at {', '.join(nondeterministic)}")
    for name, want, got in zip(names, ref, first):
        if not same(want, got, tol=tol, equal_nan=True):
            line = next(n["line"] for n in graph.nodes if n["name"] == name)
            where = re.search(r'loc\("([^"]*)", (\d+)', line)
            print(f"tracejit analyze: first divergence at %{name}"
                  + (f" ({where.group(1)}:{where.group(2)})" if where else "")
                  + f": max abs difference {_max_difference(want, got):.3g}")
            return 1
    print(f"tracejit analyze: all {len(names)} values match eager")
    return 0 if not nondeterministic else 1


def _max_difference(a, b):
    if a.numel() == 0 or a.shape != b.shape:
        return 0.0
    return (a.double() - b.double()).abs().max().item()


def _store_intermediates(out_dir, graph, names, ref, got):
    metas = {n["name"]: n["meta"] for n in graph.nodes}
    store = os.path.join(out_dir, "storages")
    lines = []
    for name, want, have in zip(names, ref, got):
        eager, backend = store_tensor(want, store), store_tensor(have, store)
        lines.append(f"%{name} {metas[name]} eager={eager['file']}@{eager['offset']} "
                     f"compiled={backend['file']}@{backend['offset']} max_abs_diff={_max_difference(want, have):.3g}")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "index.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"tracejit analyze: {len(names)} intermediates stored, listed in {os.path.join(out_dir, 'index.txt')}")

# ------------------------------------------------------------- the wrapper


def _specs_of(inputs, save=False):
    """Input specs; with `save` (config.repro_save_inputs) each also names
    its values in the content store under repro_dir/storages."""
    store = os.path.join(config.repro_dir, "storages")
    return [(list(t.shape), list(t.stride()), str(t.dtype).replace("torch.", ""), bool(t.requires_grad))
            + ((store_tensor(t, store),) if save else ()) for t in inputs]


def _dump_and_raise(text, specs, backend, stage, failure, cause=None):
    directory = config.repro_dir
    path = write_repro(os.path.join(directory, "repro.py"), text, specs, backend, stage, failure)
    message = f"backend {backend!r} failed ({failure}); repro written to {path}"
    if config.repro_level >= 2:
        cfg = {k: getattr(config, k) for k in _REPRO_CONFIG}
        minified = minify(text, specs, backend, stage, cfg, os.path.join(directory, "minified_repro.py"),
                          budget_s=float(config.repro_minify_budget_s), log=lambda s: print(s, file=sys.stderr))
        if minified:
            message += f", minified to {minified}"
    raise _C.BackendCompilerFailed(message) from cause


def _failure_point(gm, inputs, backend, failure, cause):
    """Dumps the graph named by repro_after and raises."""
    save = bool(config.repro_save_inputs)
    if config.repro_after == "aot":
        last = _C._last_backend_failure()
        if last is not None:
            text, specs, _message = last
            _dump_and_raise(text, specs, backend, "aot", failure, cause)
    _dump_and_raise(gm.text, _specs_of(inputs, save), backend, "dynamo", failure, cause)


_checkpoints = [0]


def debug_backend(name):
    """A Python backend wrapping the registered backend `name` (see the
    module docstring). The accuracy check of level 4 is deferred to the
    first call, so that it runs on the real inputs (the seeds'
    `deferred_for_real_inputs`)."""
    def backend(gm, example_inputs):
        level = config.repro_level
        if level >= 3:
            _checkpoints[0] += 1
            write_repro(os.path.join(config.repro_dir, "checkpoints", f"graph_{_checkpoints[0]}.py"), gm.text,
                        _specs_of(example_inputs, bool(config.repro_save_inputs)), name, "dynamo",
                        "checkpoint before compiling")
        _C._last_backend_failure()  # forget older failures
        try:
            compiled = _C.compile_graph(gm, name, list(example_inputs), "dynamo")
        except Exception as e:  # noqa: BLE001
            _failure_point(gm, example_inputs, name, f"compile error: {type(e).__name__}: {e}".splitlines()[0], e)
        unchecked = [level >= 4]

        def run(*args):
            if unchecked[0]:
                unchecked[0] = False
                failure = check(gm.text, None, name, "dynamo", config.repro_tolerance, args=list(args))
                if failure and failure.startswith("accuracy"):
                    _dump_and_raise(gm.text, _specs_of(args, bool(config.repro_save_inputs)), name, "dynamo",
                                    failure)
            try:
                return compiled(*args)
            except Exception as e:  # noqa: BLE001
                try:  # an error eager raises too is the program's, not the backend's
                    gm(*_clones(args))
                except Exception:  # noqa: BLE001
                    raise e from None
                _failure_point(gm, args, name, f"run error: {type(e).__name__}: {e}".splitlines()[0], e)
        return run
    backend.__name__ = f"debug_backend_{name}"
    return backend
