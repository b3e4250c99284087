"""tracejit: a TorchDynamo-style JIT for PyTorch programs, in C++.

    fc = tracejit.compile(fn, backend="llvm", fullgraph=False, dynamic=None)
    @tracejit.compile
    @tracejit.compile(backend="eager")
    fm = tracejit.compile(module)

See API.md for the contract. This package is a thin layer over the C++
runtime `_tracejit` (built into the launcher, or an extension module).
"""
import atexit as _atexit
import functools as _functools
import os as _os
import sys as _sys

import _tracejit as _C

from ._config import config

__all__ = [
    "compile", "disable", "explain", "reset", "counters", "config",
    "Unsupported", "BackendCompilerFailed", "GraphModule",
]

__version__ = _C.version_lines()[0].split()[1]

Unsupported = _C.Unsupported
BackendCompilerFailed = _C.BackendCompilerFailed
GraphModule = _C.GraphModule
Unsupported.__module__ = BackendCompilerFailed.__module__ = GraphModule.__module__ = "tracejit"

_UNSET = object()

if _os.environ.get("TRACEJIT_LOGS"):
    _C.set_logs(_os.environ["TRACEJIT_LOGS"])


def compile(fn=None, *, backend=_UNSET, fullgraph=False, dynamic=None):
    """Compile `fn` (a function, a callable or an nn.Module).

    Usable as `compile(fn, ...)`, as `@compile` and as `@compile(...)`.
    Calls of the result run the frames of `fn` (and of what it calls, when
    not inlined) through tracejit. An unknown backend name raises
    ValueError here, not at the first call.
    """
    if backend is _UNSET:
        backend = config.backend
    _C.check_backend(backend)
    if not isinstance(fullgraph, bool):
        raise TypeError(f"tracejit.compile: fullgraph must be a bool, not {fullgraph!r}")
    if dynamic not in (None, True, False):
        raise TypeError(f"tracejit.compile: dynamic must be None, True or False, not {dynamic!r}")
    if fn is None:
        return lambda f: compile(f, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
    if not callable(fn):
        raise TypeError(f"tracejit.compile: expected a function or an nn.Module, got {fn!r}")
    compiled = _C.compile_function(fn, backend, fullgraph, dynamic)
    torch = _sys.modules.get("torch")
    if torch is not None and isinstance(fn, torch.nn.Module):
        from ._module import compile_module

        return compile_module(fn, compiled)
    _functools.update_wrapper(compiled, fn)
    return compiled


def disable(fn=None):
    """`fn`'s frames are never traced, also when called from compiled code."""
    if fn is None:
        return disable
    return _functools.update_wrapper(_C.disable(fn), fn)


def explain(fn):
    """`explain(fn)(*args, **kwargs)` runs `fn` once, traced from scratch
    (no cache is read or written), and returns an ExplainOutput with
    graph_count, graph_break_count, break_reasons, op_count and graphs."""
    from ._explain import explain as _explain

    backend = config.backend
    return _explain(fn, lambda f: compile(f, backend=backend))


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
