"""config.cache_size_limit: past the limit a frame runs uncompiled, a
UserWarning naming cache_size_limit is issued once, and results stay
right; shapes compiled before the limit still hit the cache."""
import warnings

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish


def fn(x):
    return (x.cos() * 2 + x.shape[0]).sum(-1)


tracejit.reset()
saved = tracejit.config.cache_size_limit
check_equal(saved, 8, "cache_size_limit defaults to 8")
tracejit.config.cache_size_limit = 2
# dynamic=False: every new shape needs its own entry, also once automatic
# dynamic shapes exist.
compiled = tracejit.compile(fn, backend=BACKEND, dynamic=False)

torch.manual_seed(0)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ok = True
    for rows in (1, 2, 3, 4, 5, 3, 1, 2):
        x = torch.randn(rows, 3)
        ok &= torch.allclose(compiled(x), fn(x))
check(ok, "every call matches eager, before and past the limit")
limit_warnings = [w for w in caught if "cache_size_limit" in str(w.message)]
check_equal(len(limit_warnings), 1, "one warning naming cache_size_limit")
check(all(issubclass(w.category, UserWarning) for w in limit_warnings), "the warning is a UserWarning")
if limit_warnings:
    print(f"      warning: {limit_warnings[0].message}")
c = tracejit.counters()
check_equal(c["graphs_compiled"], 2, "only cache_size_limit graphs compiled")
check_equal(c["cache_hits"], 2, "the two shapes compiled before the limit still hit the cache")
check_equal(c["graph_breaks"], 0, "no graph break")

# A second function has its own budget (the limit is per code object).
def other(x):
    return x * 3


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    c_other = tracejit.compile(other, backend=BACKEND, dynamic=False)
    for rows in (1, 2):
        x = torch.randn(rows)
        check(torch.equal(c_other(x), x * 3), f"other function, {rows} rows: matches eager")
check_equal([str(w.message) for w in caught if "cache_size_limit" in str(w.message)], [],
            "no warning for a function within its limit")
check_equal(tracejit.counters()["graphs_compiled"], 4, "the other function compiled its own graphs")

# After reset and a higher limit the frame compiles again.
tracejit.reset()
tracejit.config.cache_size_limit = saved
for rows in (1, 2, 3, 4, 5):
    compiled(torch.randn(rows, 3))
check_equal(tracejit.counters()["graphs_compiled"], 5, "after reset with the default limit: 5 shapes, 5 graphs")

finish()
