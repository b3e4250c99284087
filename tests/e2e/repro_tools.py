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
    return subprocess.run([LAUNCHER, path, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


def provoke(bug, stage, level):
    """Compiles `twenty` with the bug on; returns (exception, repro_dir)."""
    tracejit.reset()
    directory = os.path.join(ROOT, f"{bug}_{stage}_{level}")
    tracejit.config.repro_after = stage
    tracejit.config.repro_level = level
    tracejit.config.repro_dir = directory
    tracejit.config.debug_inject_bug = bug
    try:
        compiled = tracejit.compile(twenty, backend="llvm")
        compiled(torch.randn(64), torch.randn(64))
        return None, directory
    except tracejit.BackendCompilerFailed as e:
        return e, directory
    finally:
        tracejit.config.repro_after = None
        tracejit.config.debug_inject_bug = None


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
err, directory = provoke("relu_compile_error", "dynamo", 3)
checkpoints = os.path.join(directory, "checkpoints")
check(os.path.isdir(checkpoints) and os.listdir(checkpoints), "level 3: a checkpoint is written before compiling")

# Level 4: the accuracy bug is caught and reproduced.
err, directory = provoke("relu_accuracy_error", "dynamo", 4)
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
