"""tracejit: a TorchDynamo-style JIT for PyTorch programs, in C++.

    fc = tracejit.compile(fn, backend=None, fullgraph=False, dynamic=None, mode=None, options=None)
    @tracejit.compile
    @tracejit.compile(backend="eager")
    fm = tracejit.compile(module)

The user-facing contract (API, options, environment variables, log
topics) is docs/api.md in tracejit's repository; `build/tracejit --help`
lists the options. This package is a thin layer over the C++ runtime
`_tracejit` (built into the launcher, or an extension module).
"""
import atexit as _atexit
import functools as _functools
import os as _os
import sys as _sys

import _tracejit as _C

from ._config import config

__all__ = [
    "compile", "disable", "explain", "reset", "counters", "config", "mark_dynamic", "mark_static",
    "Unsupported", "BackendCompilerFailed", "GraphModule", "MODES", "same", "TracejitWarning",
]

__version__ = _C.version_lines()[0].split()[1]

Unsupported = _C.Unsupported
BackendCompilerFailed = _C.BackendCompilerFailed
# Every warning tracejit gives (a UserWarning): `-W error::UserWarning`,
# filters and warnings.catch_warnings apply.
TracejitWarning = _C.TracejitWarning
GraphModule = _C.GraphModule
Unsupported.__module__ = BackendCompilerFailed.__module__ = GraphModule.__module__ = "tracejit"

if _os.environ.get("TRACEJIT_LOGS"):
    _C.set_logs(_os.environ["TRACEJIT_LOGS"])

# torch.compile's modes, and what each means in tracejit.
MODES = {
    "default": "the backend's default settings",
    "reduce-overhead": "as default: a cache hit is already one guard check in C "
                       "(tracejit has no CUDA graphs yet)",
    "max-autotune": "as default: the code generators have no tuning search yet",
    "max-autotune-no-cudagraphs": "as max-autotune",
}


def compile(fn=None, *, backend=None, fullgraph=False, dynamic=None, mode=None, options=None, disable=False):
    """Compile `fn` (a function, a callable or an nn.Module), like torch.compile.

    Usable as `compile(fn, ...)`, as `@compile` and as `@compile(...)`.
    Calls of the result run the frames of `fn` (and of what it calls, when
    not inlined) through tracejit; an nn.Module gives an nn.Module.

    backend:   "llvm", "eager", "aot_eager", "nvrtc", or a callable
               `backend(graph_module, example_inputs) -> callable`; None means
               tracejit.config.backend ("llvm" unless --backend or
               TRACEJIT_BACKEND say otherwise). An unknown name raises
               ValueError here, not at the first call.
    fullgraph: True makes any graph break raise tracejit.Unsupported.
    dynamic:   None (automatic), False (always specialize), True (symbolic).
    mode:      None or one of tracejit.MODES ("default", "reduce-overhead",
               "max-autotune", "max-autotune-no-cudagraphs"), as torch.compile;
               tracejit.MODES says what each means here.
    options:   None or a dict of backend options (not with `mode`, as
               torch.compile); the built-in backends take none yet, so a key
               raises ValueError.
    disable:   True returns `fn` itself, uncompiled.
    """
    if backend is None:
        backend = config.backend
    _C.check_backend(backend)
    if not isinstance(fullgraph, bool):
        raise TypeError(f"tracejit.compile: fullgraph must be a bool, not {fullgraph!r}")
    if dynamic not in (None, True, False):
        raise TypeError(f"tracejit.compile: dynamic must be None, True or False, not {dynamic!r}")
    if mode is not None and mode not in MODES:
        raise ValueError(f"tracejit.compile: unknown mode {mode!r} (known: {', '.join(map(repr, MODES))})")
    if mode is not None and options is not None:
        raise ValueError("tracejit.compile: give mode or options, not both (as torch.compile)")
    if options is not None:
        if not isinstance(options, dict):
            raise TypeError(f"tracejit.compile: options must be a dict, not {type(options).__name__}")
        if options:
            raise ValueError(f"tracejit.compile: unknown option(s) {', '.join(map(repr, options))} "
                             f"(the {backend!r} backend takes no options)")
    if fn is None:
        return lambda f: compile(f, backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode,
                                 options=options, disable=disable)
    if not callable(fn):
        raise TypeError(f"tracejit.compile: expected a function or an nn.Module, got {fn!r}")
    if disable:
        return fn
    # What explain() compiles a compiled function or module with (its own options).
    compile_options = dict(backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode, options=options)
    if config.repro_after is not None and isinstance(backend, str) and backend != "eager":
        from ._repro import debug_backend

        backend = debug_backend(backend)  # the repro/minifier flow (API.md "Debugging tools")
    compiled = _C.compile_function(fn, backend, fullgraph, dynamic)
    torch = _sys.modules.get("torch")
    if torch is not None and isinstance(fn, torch.nn.Module):
        from ._module import compile_module

        def recompile(module):
            return compile(module, backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode, options=options)

        compiled._tracejit_options = compile_options
        return compile_module(fn, compiled, recompile)
    _functools.update_wrapper(compiled, fn)
    compiled._tracejit_options = compile_options  # after update_wrapper, which copies fn's __dict__
    return compiled


def same(ref, res, fp64_ref=None, *, tol=1e-4, cos_similarity=False, equal_nan=False, exact_dtype=True,
         multiplier=None):
    """The accuracy comparison of the debugging tools: nested lists, tuples,
    dicts and scalars item by item; tensors by dtype (exact for bool and
    integers), shape, and values within `tol` or, with a float64 reference
    `fp64_ref` (nested like `ref`), a root-mean-square error against it no
    larger than `multiplier` (2.0; 3.0 for half types) times eager's
    (TorchDynamo's rule; tracejit/_same.py)."""
    from ._same import same as _same  # imports torch: not at `import tracejit`

    return _same(ref, res, fp64_ref, tol=tol, cos_similarity=cos_similarity, equal_nan=equal_nan,
                 exact_dtype=exact_dtype, multiplier=multiplier)


def disable(fn=None):
    """`fn`'s frames are never traced, also when called from compiled code."""
    if fn is None:
        return disable
    return _functools.update_wrapper(_C.disable(fn), fn)


def _compiled_target(fn):
    """(the callable `fn` compiles, the options of tracejit.compile it was
    compiled with) for a compiled function, a method of one, or a compiled
    module; (fn, None) for anything else."""
    import types

    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, _C.CompiledFunction):
        inner, options = _compiled_target(fn.__func__)
        return types.MethodType(inner, fn.__self__), options
    compiled = getattr(type(fn), "_tracejit_compiled", None)  # a compiled module's class (_module.py)
    if isinstance(compiled, _C.CompiledFunction) and hasattr(fn, "_orig_mod"):
        return fn._orig_mod, _compiled_options(compiled)
    if isinstance(fn, _C.CompiledFunction):
        return fn._tracejit_fn, _compiled_options(fn)
    return fn, None


def _compiled_options(compiled):
    options = compiled.__dict__.get("_tracejit_options")
    if options is None:  # made by _tracejit.compile_function directly
        backend = compiled._tracejit_backend
        options = dict(backend=backend) if backend is not None else {}
    return options


def explain(fn):
    """`explain(fn)(*args, **kwargs)` runs `fn` once, traced from scratch
    (no cache is read or written), and returns an ExplainOutput with
    graph_count, graph_break_count, break_reasons, op_count and graphs.
    A function or module compiled by tracejit.compile is explained with the
    backend and options it was compiled with; anything else with
    tracejit.config.backend."""
    from ._explain import explain as _explain

    target, options = _compiled_target(fn)
    if options is None:
        options = dict(backend=config.backend)
    return _explain(target, lambda f: compile(f, **options))


def _mark(name, t, dim):
    import torch
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"tracejit.{name}: expected a tensor, not {type(t).__name__}")
    dims = list(dim) if isinstance(dim, (list, tuple)) else [dim]
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool) or not -t.dim() <= d < max(t.dim(), 1):
            raise IndexError(f"tracejit.{name}: dim {d!r} is out of range for a tensor of {t.dim()} dims")
    return {d % t.dim() for d in dims} if t.dim() else set()


def mark_dynamic(t, dim):
    """Trace dimension `dim` (an int or a list of ints) of the input tensor
    `t` as dynamic from the next compile on: the compiled entry serves every
    size >= 2 there (like torch._dynamo.mark_dynamic). dynamic=False wins."""
    dims = _mark("mark_dynamic", t, dim)
    t._tracejit_dynamic_dims = set(getattr(t, "_tracejit_dynamic_dims", ())) | dims
    t._tracejit_static_dims = set(getattr(t, "_tracejit_static_dims", ())) - dims


def mark_static(t, dim):
    """Always specialize dimension `dim` of `t` (an int or a list of ints),
    even under dynamic=True or after its size changed (like
    torch._dynamo.mark_static)."""
    dims = _mark("mark_static", t, dim)
    t._tracejit_static_dims = set(getattr(t, "_tracejit_static_dims", ())) | dims
    t._tracejit_dynamic_dims = set(getattr(t, "_tracejit_dynamic_dims", ())) - dims


def reset():
    """Forget every cache entry, guard and compiled artefact; zero the counters."""
    _C.reset()


def counters():
    """A snapshot dict of tracejit's counters."""
    return _C.counters()


def _enable_compile_all():
    """--compile-all: trace every user frame with the default backend."""
    _C.set_compile_all(config.backend)


def _uninstall_at_exit():
    _C.set_compile_all(None)
    _C._uninstall_hook()


_atexit.register(_uninstall_at_exit)
