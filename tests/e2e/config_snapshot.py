"""One config snapshot (issue 10): the runtime reads tracejit.config from a
C++ mirror that the config object keeps current, so a compile reads no
Python config at all (it used to import tracejit and read the options on
every cache miss), and an assignment takes effect on the next compile."""
import warnings

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

real_config = tracejit.config


class CountingConfig:
    """Stands in for tracejit.config and counts every read of it."""

    def __init__(self):
        object.__setattr__(self, "reads", 0)

    def __getattr__(self, name):
        object.__setattr__(self, "reads", self.reads + 1)
        return getattr(real_config, name)


def f(x):
    return x * 2 + 1


# 1. Compiles read no Python config: tracejit.config is replaced by a
# counter for the duration of several compiles (misses and recompiles).
# (tracejit.compile itself reads the config once, e.g. repro_after: before.)
tracejit.reset()
compiled = tracejit.compile(f, backend=BACKEND)
counting = CountingConfig()
tracejit.config = counting
try:
    for shape in ((2,), (3,), (2, 2)):
        compiled(torch.ones(shape))
    compiled(torch.ones(2))
finally:
    tracejit.config = real_config
check_equal(tracejit.counters()["frames_traced"], 3, "three compiles happened")
check_equal(counting.reads, 0, "a compile reads no Python config (the runtime's mirror)")

# 2. An assignment takes effect on the next compile: cache_size_limit.
def g(x):
    return x - 1


for limit, want_warning in ((1, True), (8, False)):
    tracejit.reset()
    real_config.cache_size_limit = limit
    compiled = tracejit.compile(g, backend=BACKEND)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for shape in ((2,), (3,)):
            check_equal(compiled(torch.ones(shape)).tolist(), g(torch.ones(shape)).tolist(), f"limit {limit}: values")
    hit_limit = any("cache_size_limit" in str(w.message) for w in caught)
    check_equal(hit_limit, want_warning, f"cache_size_limit = {limit} applies to the next compile")
    check_equal(tracejit.counters()["frames_traced"], 1 if want_warning else 2, f"limit {limit}: compiles made")

# 3. suppress_errors, set and cleared between compiles: a backend that
# fails falls back with a warning, then raises BackendCompilerFailed.
def failing_backend(gm, example_inputs):
    raise RuntimeError("this backend always fails")


def h(x):
    return x * 3


for suppress in (True, False):
    tracejit.reset()
    real_config.suppress_errors = suppress
    compiled = tracejit.compile(h, backend=failing_backend)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            got = compiled(torch.ones(2)).tolist()
        except Exception as e:  # noqa: BLE001
            got = type(e).__name__
    check_equal(got, [3.0, 3.0] if suppress else "BackendCompilerFailed",
                f"suppress_errors = {suppress} applies to the next compile")
real_config.suppress_errors = True
real_config.cache_size_limit = 8
finish()
