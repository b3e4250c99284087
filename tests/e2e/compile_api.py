"""The tracejit module's surface: compile forms and errors, nn.Module
wrapping, disable, counters, reset, config and its env-var defaults,
exception types."""
import os
import subprocess
import sys

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish


def f(x, y):
    """adds"""
    return x + y


a, b = torch.randn(4), torch.randn(4)

# compile: call form, bare decorator, decorator with options.
cf = tracejit.compile(f)
check(torch.equal(cf(a, b), a + b), "call form")
check_equal((cf.__name__, cf.__doc__, cf.__wrapped__), ("f", "adds", f), "functools.wraps metadata")


@tracejit.compile
def g(x):
    return x * 2


check(torch.equal(g(a), a * 2), "bare decorator")


@tracejit.compile(backend=BACKEND, fullgraph=True, dynamic=False)
def h(x):
    return x - 1


check(torch.equal(h(a), a - 1), "decorator with options")
check_equal(h._tracejit_backend, BACKEND, "backend recorded")
check_equal(g._tracejit_backend, tracejit.config.backend, "default backend from config")

e = check_raises(ValueError, lambda: tracejit.compile(f, backend="nonsense"), "unknown backend raises in compile")
check(e is not None and all(n in str(e) for n in ("eager", "aot_eager", "llvm", "nvrtc")), "error lists the backends")
check_raises(ValueError, lambda: tracejit.compile(backend="nonsense"), "unknown backend raises in decorator form")
check_raises(TypeError, lambda: tracejit.compile(f, fullgraph="yes"), "fullgraph must be a bool")
check_raises(TypeError, lambda: tracejit.compile(f, dynamic=3), "dynamic must be None/True/False")
check_raises(TypeError, lambda: tracejit.compile(42), "non-callable rejected")

seen_backend = []


def my_backend(gm, example_inputs):
    seen_backend.append(gm)
    return gm


check(torch.equal(tracejit.compile(f, backend=my_backend)(a, b), a + b), "callable backend accepted")

# nn.Module: an nn.Module sharing the original's state.
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
cm = tracejit.compile(model, backend=BACKEND)
check(isinstance(cm, torch.nn.Module) and isinstance(cm, torch.nn.Sequential), "compiled module is an nn.Module")
check(torch.equal(cm(a), model(a)), "compiled module computes the same")
check_equal([id(p) for p in cm.parameters()], [id(p) for p in model.parameters()], "parameters are shared")
check_equal(list(cm.state_dict().keys()), list(model.state_dict().keys()), "state_dict keys unchanged")
cm.eval()
check(not model.training, "eval() reaches the original")
cm.train()
check(model.training, "train() reaches the original")
with torch.no_grad():
    model[0].weight.fill_(0.5)
check(torch.equal(cm[0].weight, model[0].weight), "submodule access reaches the original")
check(cm._orig_mod is model, "_orig_mod is the original")

# disable.
def plain(x):
    return x + 1


d = tracejit.disable(plain)
check_equal((d(1), d.__name__, d.__wrapped__), (2, "plain", plain), "disable returns a working wrapper")

# counters and reset.
snap = tracejit.counters()
check_equal(sorted(snap), sorted(["frames_traced", "graphs_compiled", "graph_breaks", "recompiles", "cache_hits",
                                  "guard_failures", "unique_graphs", "backend_fallbacks", "kernels_compiled",
                                  "kernel_cache_hits", "aot_captures", "graph_cache_hits", "aot_size_reuses", "program_size_reuses", "sizes_not_served",
                                  "sizes_run_op_by_op", "kernels_written_in_place", "outputs_written_back_early",
                                  "inplace_dense_fallbacks", "inputs_differ_fallbacks", "kernel_input_fallbacks", "internal_errors",
                                  "onednn_not_finite_refusals", "aot_runs_op_by_op", "frozen_first_calls_op_by_op",
                                  "aot_size_probes", "aot_merged_backward_parts"]), "counter names")
check(all(isinstance(v, int) for v in snap.values()), "counters are ints")
snap["cache_hits"] = 10 ** 6
check(tracejit.counters()["cache_hits"] != 10 ** 6, "counters() returns a snapshot")
tracejit.reset()
check(all(v == 0 for v in tracejit.counters().values()), "reset zeroes the counters")

# config.
cfg = tracejit.config
check_equal((cfg.cache_size_limit, cfg.suppress_errors, cfg.repro_after, cfg.repro_level, cfg.repro_dir,
             cfg.repro_tolerance, cfg.debug_inject_bug, cfg.verbose),
            (8, True, None, 2, "./tracejit_repro", 1e-3, None, False), "config defaults")
cfg.cache_size_limit = 3
check_equal(cfg.cache_size_limit, 3, "config is settable")
cfg.cache_size_limit = 8
check_raises(TypeError, lambda: setattr(cfg, "cache_size_limit", "many"), "config type checked")
check_raises(ValueError, lambda: setattr(cfg, "repro_after", "later"), "config choices checked")
check_raises(ValueError, lambda: setattr(cfg, "repro_level", 9), "config ranges checked")
check_raises(AttributeError, lambda: setattr(cfg, "no_such_option", 1), "unknown option rejected")
check_raises(ValueError, lambda: setattr(cfg, "backend", "nope"), "config.backend checked")


def child(code, **env):
    full = dict(os.environ)
    build = os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
    full["PYTHONPATH"] = os.path.join(build, "python")
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


r = child("import tracejit as t; c = t.config; print(c.cache_size_limit, c.suppress_errors, c.repro_after, "
          "c.repro_tolerance, c.debug_inject_bug, c.verbose)",
          TRACEJIT_CACHE_SIZE_LIMIT="3", TRACEJIT_SUPPRESS_ERRORS="0", TRACEJIT_REPRO_AFTER="aot",
          TRACEJIT_REPRO_TOLERANCE="0.5", TRACEJIT_DEBUG_INJECT_BUG="relu_runtime_error", TRACEJIT_VERBOSE="true")
check_equal(r.stdout.strip(), "3 False aot 0.5 relu_runtime_error True", "config defaults from TRACEJIT_* env vars")
r = child("import tracejit", TRACEJIT_CACHE_SIZE_LIMIT="lots")
check(r.returncode != 0 and "TRACEJIT_CACHE_SIZE_LIMIT" in r.stderr, "a bad env value names the variable")

# exception types.
check(issubclass(tracejit.Unsupported, Exception) and issubclass(tracejit.BackendCompilerFailed, Exception),
      "exception types")
check_equal(tracejit.Unsupported.__module__, "tracejit", "exceptions live in tracejit")

finish()
