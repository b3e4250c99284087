"""tracejit.config: settable options, each defaulting to TRACEJIT_<NAME>.

Every option has a type; assigning a value of another type, or an unknown
name, raises at once. Environment values are converted to the option's
type when tracejit is imported; a bad one raises ValueError naming it.
"""
import os

_NONE = object()


def _parse_bool(text):
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected a boolean (1/0/true/false), got {text!r}")


def _optional_choice(*choices):
    def check(value):
        if value is None or value in choices:
            return value
        raise ValueError(f"expected None or one of {', '.join(map(repr, choices))}, got {value!r}")

    def parse(text):
        return None if text.strip().lower() in ("", "none") else check(text.strip())

    return check, parse


def _int_in(lo, hi):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected an int, got {value!r}")
        if not lo <= value <= hi:
            raise ValueError(f"expected an int in [{lo}, {hi}], got {value}")
        return value

    return check, lambda text: check(int(text))


def _typed(kind):
    def check(value):
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise TypeError(f"expected {kind.__name__}, got {value!r}")
        return value

    parse = _parse_bool if kind is bool else kind
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
    "cache_size_limit": (8, _int_in(1, 1 << 20)),
    "suppress_errors": (True, _typed(bool)),
    "repro_after": (None, _optional_choice("dynamo", "aot")),
    "repro_level": (2, _int_in(1, 4)),
    "repro_dir": ("./tracejit_repro", _typed(str)),
    "repro_tolerance": (1e-3, _typed(float)),
    "debug_inject_bug": (None, _optional_choice("relu_compile_error", "relu_runtime_error", "relu_accuracy_error")),
    "verbose": (False, _typed(bool)),
}


class Config:
    """tracejit's settable options (see API.md)."""

    def __init__(self):
        values = {}
        for name, (default, (_, parse)) in _OPTIONS.items():
            env = "TRACEJIT_" + name.upper()
            text = os.environ.get(env)
            if text is None:
                values[name] = default
                continue
            try:
                values[name] = parse(text)
            except (TypeError, ValueError) as e:
                raise ValueError(f"tracejit: bad {env}={text!r}: {e}") from None
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

    def __dir__(self):
        return list(_OPTIONS)

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"tracejit.config({inner})"


config = Config()
