"""tracejit.config: settable options, each defaulting to TRACEJIT_<NAME>.

Every option has a type; assigning a value of another type, or an unknown
name, raises at once. Environment values are converted to the option's
type when tracejit is imported; a bad one raises ValueError naming it.
"""
import os

_NONE = object()


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def _parse_bool(text):
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(f"expected a boolean (1/0/true/false/yes/no/on/off), got {text!r}")


def _parse_int(text):
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"expected an int, got {text!r}") from None


def _parse_float(text):
    try:
        return float(text.strip())
    except ValueError:
        raise ValueError(f"expected a number, got {text!r}") from None


def _optional_choice(*choices):
    def check(value):
        if value is None or value in choices:
            return value
        raise ValueError(f"expected None or one of {', '.join(map(repr, choices))}, got {value!r}")

    def parse(text):
        return None if text.strip().lower() in ("", "none") else check(text.strip())

    return check, parse


def _cuda_arch():
    def check(value):
        if value is None or (isinstance(value, str) and value.startswith("sm_") and value[3:].isdigit()):
            return value
        raise ValueError(f"expected None or a CUDA architecture such as 'sm_80', got {value!r}")

    def parse(text):
        return None if text.strip().lower() in ("", "none") else check(text.strip())

    return check, parse


def _optional_bool():
    def check(value):
        if value is None or isinstance(value, bool):
            return value
        raise TypeError(f"expected None, True or False, got {value!r}")

    def parse(text):
        return None if text.strip().lower() in ("", "none") else _parse_bool(text)

    return check, parse


def _cache_dir():
    def check(value):
        if value is None or isinstance(value, str):
            return value
        raise TypeError(f"expected None or a directory (str; '' turns the disk caches off), got {value!r}")

    return check, check  # the environment's text is the directory itself, '' included


def _int_in(lo, hi=None):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected an int, got {value!r}")
        if hi is None and value < lo:
            raise ValueError(f"expected an int >= {lo}, got {value}")
        if hi is not None and not lo <= value <= hi:
            raise ValueError(f"expected an int in [{lo}, {hi}], got {value}")
        return value

    return check, lambda text: check(_parse_int(text))


def _typed(kind):
    def check(value):
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise TypeError(f"expected {kind.__name__}, got {value!r}")
        return value

    parse = {bool: _parse_bool, float: _parse_float}.get(kind, kind)
    return check, lambda text: check(parse(text))


def _backend():
    def check(value):
        import _tracejit

        _tracejit.check_backend(value)
        return value

    return check, lambda text: check(text.strip())


_OPTIONS = {
    # name: (default, (check, parse-from-env))
    "backend": ("llvm", _backend()),
    "cache_size_limit": (8, _int_in(1)),
    "suppress_errors": (True, _typed(bool)),
    "repro_after": (None, _optional_choice("dynamo", "aot")),
    "repro_level": (2, _int_in(1, 4)),
    "repro_dir": ("./tracejit_repro", _typed(str)),
    "repro_tolerance": (1e-3, _typed(float)),
    "repro_minify_budget_s": (300.0, _typed(float)),
    "repro_save_inputs": (False, _typed(bool)),
    "debug_inject_bug": (None, _optional_choice("relu_compile_error", "relu_runtime_error", "relu_accuracy_error",
                                                  "relu_internal_error", "frame_internal_error")),
    "verbose": (False, _typed(bool)),
    # the nvrtc backend's target: None is the device's, else sm_80
    "nvrtc_arch": (None, _cuda_arch()),
    # Tensor.item(): False breaks the graph there; True keeps the number in
    # the graph (a 0-d node Python arithmetic on it is traced into).
    "capture_scalar_outputs": (False, _typed(bool)),
    # nonzero, x[mask], masked_select, unique, repeat_interleave(tensor),
    # torch.where(cond): True keeps them in the graph (their result's size
    # is known when the graph runs); False breaks the graph there.
    "capture_dynamic_output_shape_ops": (True, _typed(bool)),
    # The llvm backend: an inference graph's parameters and buffers become
    # constants (batch norms folded into convolutions, constant subgraphs
    # computed once), recomputed after any write to them.
    "freezing": (True, _typed(bool)),
    # For tracejit's own tests: a freshly compiled entry whose guards cannot
    # pass again (fail on the frame that made them, or check the identity of
    # an object made afresh by each read) raises AssertionError.
    "debug_check_guards": (False, _typed(bool)),
    # Dynamic shapes: an entry makes one AOT graph of the captures of its
    # first sizes and specializes it for later sizes; False captures every
    # size anew.
    "aot_size_templates": (True, _typed(bool)),
    # For tracejit's own tests: each size an AOT size template serves is
    # also captured, and the two must give the same graphs (AssertionError).
    "debug_check_aot_templates": (False, _typed(bool)),
    # Distributed training: at the first compile of each frame, every rank
    # gathers every rank's sizes and break decisions and all decide alike.
    # None: on when torch.distributed is initialized with world size > 1.
    "compiler_collectives": (None, _optional_bool()),
    # The disk caches (compiled kernels, AOT's graphs): None is
    # $XDG_CACHE_HOME/tracejit (~/.cache/tracejit); "" turns them off.
    "cache_dir": (None, _cache_dir()),
    # AOT's results kept on disk for the next process (docs/api.md, warm start).
    "graph_cache": (True, _typed(bool)),
    # The disk caches' size cap together; least recently used entries go first.
    "cache_max_mb": (1024, _int_in(1)),
}

# Environment variables that are not config options (read by the launcher
# and the package): name -> meaning, for --help and docs/api.md.
ENV_ONLY = {
    "TRACEJIT_COMPILE_ALL": "a boolean: trace every frame of the user's code (as --compile-all)",
    "TRACEJIT_LOGS": "comma list of log topics (as --log)",
}


def env_name(option):
    return "TRACEJIT_" + option.upper()


def _parse_env(name, text):
    """The option's value from its environment text; ValueError with a
    one-line message naming the variable when it is malformed."""
    parse = _OPTIONS[name][1][1]
    try:
        return parse(text)
    except (TypeError, ValueError) as e:
        raise ValueError(f"bad {env_name(name)}={text!r}: {e}") from None


def _mirror(name, value):
    """The runtime keeps a C++ copy of the options it reads (runtime_state.h):
    a compile never reads this object, an assignment shows on the next one."""
    try:
        import _tracejit
    except ImportError:  # imported outside the launcher: nothing to mirror into
        return
    _tracejit._set_config(name, value)


class Config:
    """tracejit's settable options (docs/api.md)."""

    def __init__(self):
        values = {}
        for name, (default, _) in _OPTIONS.items():
            text = os.environ.get(env_name(name))
            values[name] = default if text is None else _parse_env(name, text)
            _mirror(name, values[name])
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"tracejit.config has no option {name!r}") from None

    def __setattr__(self, name, value):
        if name not in _OPTIONS:
            raise AttributeError(f"tracejit.config has no option {name!r} (options: {', '.join(_OPTIONS)})")
        check = _OPTIONS[name][1][0]
        try:
            self._values[name] = check(value)
        except (TypeError, ValueError) as e:
            raise type(e)(f"tracejit.config.{name}: {e}") from None
        _mirror(name, self._values[name])

    def __dir__(self):
        return list(_OPTIONS)

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"tracejit.config({inner})"


config = Config()


def describe_environment():
    """The config options' environment variables, one per line (--help)."""
    lines = [f"  {name:32} {meaning}" for name, meaning in ENV_ONLY.items()]
    for name, (default, _) in _OPTIONS.items():
        lines.append(f"  {env_name(name):32} tracejit.config.{name} (default {default!r})")
    return "\n".join(lines) + "\n"
