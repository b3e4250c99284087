"""The debugging tools (issue 14, API.md "Debugging tools") against the llvm
backend's injected bugs: for each bug and repro_after stage the failure is
raised as BackendCompilerFailed naming repro.py, the script exits 1 under
build/tracejit with no environment and 0 once the bug is off; the minifier
shrinks a 20-node graph to the relu and at most 3 nodes; level 3 leaves a
checkpoint; level 4 catches the accuracy bug; tracejit.same's rules."""
import os
import re
import shutil
import subprocess
import tempfile
import time

import torch

import tracejit
from e2e_util import check, check_equal, finish

LAUNCHER = os.readlink("/proc/self/exe")
ROOT = tempfile.mkdtemp(prefix="tracejit_repro_")


def twenty(x, y):
    a = x * y + 1.0
    b = a.sin() * 2.0 - y
    c = b.exp().tanh() + x
    d = c * c - a
    e = d.relu()  # the only relu: every injected bug sits here
    f = e + b * 0.5
    g = f.cos() - c
    return g * 3.0 + d.abs()


def script(path, *args, env_off=False):
    env = {"PATH": "/usr/bin:/bin"}
    # a sanitizer run (scripts/test --asan) keeps its options: LeakSanitizer's exit code is not the script's
    env.update({k: os.environ[k] for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LD_PRELOAD") if k in os.environ})
    return subprocess.run([LAUNCHER, path, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


def provoke(bug, stage, level, save_inputs=False, args=None, tag="", minify_budget_s=None):
    """Compiles `twenty` with the bug on; returns (exception, repro_dir).
    `minify_budget_s=0`: no minification where the caller asserts nothing
    of it (the minifier's own checks are the level 2, matrix and saved
    inputs sections'), which saves the suite a minute or more."""
    tracejit.reset()
    budget = tracejit.config.repro_minify_budget_s
    if minify_budget_s is not None:
        tracejit.config.repro_minify_budget_s = minify_budget_s
    directory = os.path.join(ROOT, f"{bug}_{stage}_{level}{tag}")
    tracejit.config.repro_after = stage
    tracejit.config.repro_level = level
    tracejit.config.repro_dir = directory
    tracejit.config.debug_inject_bug = bug
    tracejit.config.repro_save_inputs = save_inputs
    try:
        compiled = tracejit.compile(twenty, backend="llvm")
        compiled(*(args or (torch.randn(64), torch.randn(64))))
        return None, directory
    except tracejit.BackendCompilerFailed as e:
        return e, directory
    finally:
        tracejit.config.repro_minify_budget_s = budget
        tracejit.config.repro_after = None
        tracejit.config.debug_inject_bug = None
        tracejit.config.repro_save_inputs = False


def repro_reproduces(path, what):
    got = script(path)
    check(got.returncode == 1 and "FAIL" in got.stdout, f"{what}: {os.path.basename(path)} exits 1 ({got.stdout.strip()[:120]})")
    text = open(path).read()
    off = path.replace(".py", "_bug_off.py")
    with open(off, "w") as f:
        f.write(re.sub(r"'debug_inject_bug': '\w+'", "'debug_inject_bug': None", text))
    got = script(off)
    check_equal(got.returncode, 0, f"{what}: with the bug off the script exits 0")


def calls_in(path):
    text = open(path).read()
    graph = re.search(r"GRAPH = '(.*?)'\n", text, re.S) or re.search(r'GRAPH = "(.*?)"\n', text, re.S)
    return re.findall(r"call_function\[target=([\w.]+)\]", graph.group(1).encode().decode("unicode_escape"))


for bug, kind in (("relu_compile_error", "compile error"), ("relu_runtime_error", "run error")):
    for stage in ("dynamo", "aot"):
        what = f"{bug}, repro_after={stage}, level 1"
        err, directory = provoke(bug, stage, 1)
        check(err is not None and "repro.py" in str(err), f"{what}: BackendCompilerFailed names repro.py ({err})")
        repro = os.path.join(directory, "repro.py")
        check(os.path.exists(repro), f"{what}: repro.py written")
        if os.path.exists(repro):
            check(f"STAGE = '{stage}'" in open(repro).read(), f"{what}: the repro is at the {stage} stage")
            check("#       relu = torch.ops.aten.relu.default(" in open(repro).read(),
                  f"{what}: the repro shows the graph as Python (ATen calls)")
            repro_reproduces(repro, what)

# Level 2: minified to the relu and at most 3 other nodes.
for bug, stage in (("relu_compile_error", "dynamo"), ("relu_runtime_error", "aot")):
    what = f"{bug}, repro_after={stage}, level 2"
    err, directory = provoke(bug, stage, 2)
    minified = os.path.join(directory, "minified_repro.py")
    check(err is not None and "minified_repro.py" in str(err), f"{what}: the error names minified_repro.py")
    if os.path.exists(minified):
        ops = calls_in(minified)
        check(any("relu" in op for op in ops) and len(ops) <= 4, f"{what}: minified to {ops}")
        repro_reproduces(minified, what)
    else:
        check(False, f"{what}: minified_repro.py written")

# Level 3: a checkpoint of every graph before compiling.
err, directory = provoke("relu_compile_error", "dynamo", 3, minify_budget_s=0)
checkpoints = os.path.join(directory, "checkpoints")
check(os.path.isdir(checkpoints) and os.listdir(checkpoints), "level 3: a checkpoint is written before compiling")

# Level 4: the accuracy bug is caught and reproduced.
err, directory = provoke("relu_accuracy_error", "dynamo", 4, minify_budget_s=0)
check(err is not None and "accuracy" in str(err), f"level 4: the accuracy bug raises with 'accuracy' ({err})")
if os.path.exists(os.path.join(directory, "repro.py")):
    repro_reproduces(os.path.join(directory, "repro.py"), "relu_accuracy_error, level 4")
    got = script(os.path.join(directory, "repro.py"), "analyze")
    check(got.returncode == 1 and re.search(r"first divergence at %relu", got.stdout) is not None,
          f"analyze names the relu as the first divergence ({got.stdout.strip()[-200:]})")
err, _ = provoke("relu_accuracy_error", "dynamo", 1)
check(err is None, "levels 1-3 do not check accuracy")
err, _ = provoke(None, "dynamo", 4)
check(err is None, "with no bug, level 4 passes")

# The whole matrix: every bug x stage x level gives its files and a script
# that fails (the accuracy bug only where it is checked: level 4).
tracejit.config.repro_minify_budget_s = 15
for bug in ("relu_compile_error", "relu_runtime_error", "relu_accuracy_error"):
    for stage in ("dynamo", "aot"):
        for level in (1, 2, 3, 4):
            what = f"matrix {bug}/{stage}/level {level}"
            err, directory = provoke(bug, stage, level, tag="_matrix")
            if bug == "relu_accuracy_error" and level < 4:
                check(err is None, f"{what}: accuracy is not checked below level 4")
                continue
            check(err is not None and os.path.exists(os.path.join(directory, "repro.py")), f"{what}: repro.py ({err})")
            if level >= 2:
                check(os.path.exists(os.path.join(directory, "minified_repro.py")), f"{what}: minified_repro.py")
            if level >= 3:
                check(os.listdir(os.path.join(directory, "checkpoints")), f"{what}: a checkpoint")
            if os.path.exists(os.path.join(directory, "repro.py")):
                got = script(os.path.join(directory, "repro.py"))
                check(got.returncode == 1, f"{what}: the repro exits 1 ({got.stdout.strip()[-120:]})")
tracejit.config.repro_minify_budget_s = 300

# repro_save_inputs: the real values travel through the content store (one
# file for two inputs that are views of one storage), and the repro uses them.
shared = torch.randn(128)
err, directory = provoke("relu_accuracy_error", "dynamo", 4, save_inputs=True, args=(shared[:64], shared[64:]),
                         tag="_saved")
repro = os.path.join(directory, "repro.py")
check(err is not None and os.path.exists(repro), f"saved inputs: repro.py written ({err})")
if os.path.exists(repro):
    got = script(repro, "get_args")
    check(got.stdout.count("saved=") == 2, f"saved inputs: get_args names the saved values ({got.stdout.strip()})")
    from tracejit._repro import make_inputs  # noqa: E402
    specs = eval(re.search(r"INPUTS = (.*)\n", open(repro).read()).group(1))  # noqa: S307 - our own file
    check(len(specs) == 2 and specs[0][4]["file"] == specs[1][4]["file"] and specs[1][4]["offset"] == 64,
          "saved inputs: one storage file for two views of one tensor")
    loaded = make_inputs(specs)
    check(len(loaded) == 2 and torch.equal(loaded[0], shared[:64]) and torch.equal(loaded[1], shared[64:])
          and loaded[0].storage().data_ptr() == loaded[1].storage().data_ptr(),
          "saved inputs: loaded back equal and still one storage")
    repro_reproduces(repro, "saved inputs")
    minified = os.path.join(directory, "minified_repro.py")
    check(os.path.exists(minified) and "'file':" in open(minified).read(),
          "saved inputs: nodes the minifier made inputs carry their saved values")
    if os.path.exists(minified):
        repro_reproduces(minified, "saved inputs, minified")
    got = script(repro, "analyze")
    index = os.path.join(directory, "analyze", "index.txt")
    check(os.path.exists(index) and len(open(index).read().splitlines()) >= 10,
          f"analyze stores every intermediate with its metadata ({got.stdout.strip()[-200:]})")

# A checkpoint survives a backend that kills the process.
crash = os.path.join(ROOT, "crash.py")
with open(crash, "w") as f:
    f.write(f"""
import os, torch, tracejit, tracejit._repro as r
tracejit.config.repro_after, tracejit.config.repro_level = "dynamo", 3
tracejit.config.repro_dir = {os.path.join(ROOT, "crash")!r}
r._C = type("Aborting", (), {{"__getattr__": lambda self, n: (lambda *a: os.abort()) if n == "compile_graph"
                              else getattr(__import__("_tracejit"), n)}})()
tracejit.compile(lambda x: (x * 2).relu(), backend="llvm")(torch.randn(8))
""")
got = script(crash)
checkpoints = os.path.join(ROOT, "crash", "checkpoints")
check(got.returncode < 0, f"the aborting backend killed the process ({got.returncode})")
check(os.path.isdir(checkpoints) and len(os.listdir(checkpoints)) == 1, "a checkpoint survives abort()")
if os.path.isdir(checkpoints) and os.listdir(checkpoints):
    point = os.path.join(checkpoints, os.listdir(checkpoints)[0])
    check("relu" in open(point).read() and script(point).returncode == 0,
          "the checkpoint holds the graph and runs alone (no bug: exit 0)")

# The minifier's candidates run one after another in one worker process; a
# candidate that kills it (a backend that aborts on relu, installed in the
# workers by a sitecustomize) is a crash, and the next one gets a new worker.
from tracejit._repro import _Candidates, _Graph, _with_constants_shrunk, minify  # noqa: E402
site = os.path.join(ROOT, "aborting_site")
os.makedirs(site)
with open(os.path.join(site, "sitecustomize.py"), "w") as f:
    f.write("""
import os, _tracejit, tracejit._repro as r
class Aborting:
    def __getattr__(self, n):
        real = getattr(_tracejit, n)
        return (lambda gm, *a: os.abort() if "aten.relu" in gm.text else real(gm, *a)) if n == "compile_graph" else real
r._C = Aborting()
""")
chain = _Graph("""graph():
    %x : f32[8]{storage=0} = placeholder[target=x]
    %mul : f32[8]{storage=1} = call_function[target=aten.mul.Tensor](args = (%x, 2.0))
    %add : f32[8]{storage=2} = call_function[target=aten.add.Tensor](args = (%mul, 1.0))
    %relu : f32[8]{storage=3} = call_function[target=aten.relu.default](args = (%add,))
    %cos : f32[8]{storage=4} = call_function[target=aten.cos.default](args = (%relu,))
    return (%cos,)
""", [([8], [1], "float32", False)])
path_before = os.environ["PYTHONPATH"]
os.environ["PYTHONPATH"] = site + os.pathsep + path_before
try:
    workers = _Candidates("llvm", "dynamo", {"debug_inject_bug": None})
    far = time.monotonic() + 300
    kinds = [workers.failure_kind(chain.copy().make_output("add"), far)]
    first = workers.proc.pid
    kinds.append(workers.failure_kind(chain.copy().make_output("mul"), far))
    check(kinds == [None, None] and workers.proc.pid == first, f"two candidates, one worker process ({kinds})")
    kinds.append(workers.failure_kind(chain, far))
    check(kinds[2] == "crash" and workers.proc is None, f"a candidate that aborts is a crash ({kinds[2]})")
    kinds.append(workers.failure_kind(chain.copy().make_output("add"), far))
    check(kinds[3] is None and workers.proc is not None and workers.proc.pid != first,
          f"the next candidate runs in a new worker ({kinds[3]})")
    workers.close()
    said = []
    out = minify(chain.text(), chain.specs(), "llvm", "dynamo", {"debug_inject_bug": None},
                 os.path.join(ROOT, "crash_minified", "minified_repro.py"), budget_s=300, log=said.append)
    check(out is not None and said and said[0].endswith("failure: crash") and calls_in(out) == ["aten.relu.default"],
          f"a crashing backend's graph minified to its relu ({said})")
finally:
    os.environ["PYTHONPATH"] = path_before

# The minifier's constant shrinking: each numeric argument, one at a time.
small = _Graph("""graph():
    %x : f32[3]{storage=0} = placeholder[target=x]
    %mul : f32[3]{storage=1} = call_function[target=aten.mul.Tensor](args = (%x, 2.5)) loc("f.py", 3, "f")
    %add : f32[3]{storage=2} = call_function[target=aten.add.Tensor](args = (%mul, 7)) loc("f.py", 4, "f")
    return (%add,)
""", [([3], [1], "float32", False)])
shrunk = [c.nodes[i]["line"] for i in range(3) for c in _with_constants_shrunk(small, i)]
check(len(shrunk) == 2 and "(%x, 1.0)) loc(" in shrunk[0] and "(%mul, 1)) loc(" in shrunk[1],
      f"constants shrink to 1 / 1.0, one candidate each: {shrunk}")

# same_two_models: outputs and, through backward, gradients.
from tracejit._same import same_two_models  # noqa: E402
x = torch.randn(5, requires_grad=True)
check(same_two_models(lambda a: a * 2, lambda a: a + a, [x]) is None, "same_two_models: equal models")
check_equal(same_two_models(lambda a: a * 2, lambda a: a * 2 + 1e-2, [x]), "outputs", "same_two_models: outputs")
check_equal(same_two_models(lambda a: a * 2, lambda a: a.detach() * 2 + (a - a.detach()) * 3, [x]), "gradients",
            "same_two_models: equal outputs, different gradients")

# tracejit.same
check(tracejit.same([torch.ones(3), {"a": 2}], [torch.ones(3) + 1e-6, {"a": 2}]), "same: nested containers within tol")
check(not tracejit.same(torch.ones(3), torch.ones(3) + 0.1), "same: a difference beyond tol")
check(not tracejit.same(torch.ones(3), torch.ones(3, dtype=torch.float64)), "same: exact_dtype")
check(tracejit.same(torch.ones(3), torch.ones(3, dtype=torch.float64), exact_dtype=False), "same: exact_dtype=False")
check(not tracejit.same(torch.tensor([1, 2]), torch.tensor([1, 3])), "same: integers exactly")
nan = torch.tensor([1.0, float("nan")])
check(not tracejit.same(nan, nan.clone()) and tracejit.same(nan, nan.clone(), equal_nan=True), "same: NaN handling")
ref64 = torch.linspace(0, 1, 1000, dtype=torch.float64).exp()
ref = ref64.float()
noisy = torch.linspace(0, 1, 1000).exp()  # float32 math: not bit-equal to the rounded fp64
check(not torch.equal(ref, noisy) and tracejit.same(ref, noisy, ref64, tol=1e-9),
      "same: a result as accurate as eager against fp64 passes")
check(not tracejit.same(ref, ref * 1.01, ref64, tol=1e-9), "same: far less accurate than eager fails")
check(tracejit.same(torch.ones(4), torch.ones(4) * 1.0001, cos_similarity=True), "same: cos_similarity")
check(not tracejit.same([1, 2], [1, 2, 3]) and not tracejit.same({"a": 1}, {"b": 1}), "same: structure")
shutil.rmtree(ROOT, ignore_errors=True)
finish()
