"""Issue 11: builtins and itertools over iterables traced into one graph:
all/any over generators, map, filter, functools.reduce, next/iter,
min/max/sorted with a key, itertools.chain/chain.from_iterable/islice/
product; iterators they consume are left where Python leaves them."""
import functools
import itertools

import torch

from capture_util import expect
from e2e_util import finish

x = torch.randn(4, 6)

expect("all() over a generator", lambda t: t + 1 if all(s > 0 for s in t.shape) else t, (x,))
expect("any() over a generator", lambda t: t + 1 if any(s > 5 for s in t.shape) else t - 1, (x,))


def any_stops_early(t):
    it = iter([0, 2, 5, 7])
    return any(v > 1 for v in it), list(it), t * 2


# The tracer runs a generator to its end; when a consumer stops early and
# the generator's later items moved an iterator outside it, the trace would
# differ from Python's: the frame runs as it is (no graph, one reason).
expect("any() stopping inside a generator that consumes a shared iterator", any_stops_early, (x,),
       graphs=0, breaks=1)
expect("map() of a lambda over constants", lambda t: sum(map(lambda s: s * 2, t.shape)) + t, (x,))
expect("map() of a torch function over tensors", lambda t: list(map(torch.relu, [t, -t])), (x,))
expect("map() over two iterables", lambda t: list(map(lambda a, b: a * b, [t, t + 1], (2, 3, 4))), (x,))
expect("filter()", lambda t: sum(filter(lambda s: s > 4, t.shape)) + t, (x,))
expect("filter(None, ...)", lambda t: [t * v for v in filter(None, [0, 1, 2, 0])], (x,))
expect("functools.reduce over tensors", lambda t: functools.reduce(lambda a, b: a + b, [t, t * 2, t * 3]), (x,))
expect("functools.reduce with an initial value", lambda t: functools.reduce(lambda a, b: a * b, t.shape, 1) + t, (x,))
expect("next(iter(...))", lambda t: next(iter([t, t + 1])) * 3, (x,))


def next_twice(t):
    it = iter([t, t + 1, t + 2])
    a = next(it)
    b = next(it)
    return a + b, list(it), next(it, None)


expect("next() advances a shared iterator", next_twice, (x,))
expect("min/max over an iterable and arguments", lambda t: t + min(t.shape) + max([3, 1, 2]) + max(1, 2), (x,))
expect("min/max with key=", lambda t: t * min([3, 1, 2], key=lambda v: -v) + len(max(["a", "bbb"], key=len)), (x,))
expect("max over tensors by a key", lambda t: max([t, t * 2], key=lambda u: u.shape[0]), (x,))
expect("sorted with key= and reverse=", lambda t: [t * v for v in sorted([3, -5, 1], key=abs, reverse=True)], (x,))
expect("itertools.chain", lambda t: sum(itertools.chain([t], [t * 2], (t * 3,))), (x,))
expect("itertools.chain.from_iterable", lambda t: list(itertools.chain.from_iterable([[t], [t + 1, t + 2]])), (x,))
expect("itertools.islice", lambda t: list(itertools.islice([t, t + 1, t + 2, t + 3], 1, None, 2)), (x,))
expect("itertools.product", lambda t: [a * b for a, b in itertools.product([1, 2], [t, t + 1])], (x,))
expect("itertools.product(repeat=)", lambda t: sum(a * b for a, b in itertools.product([1, 2], repeat=2)) + t, (x,))

# Where the answer needs tensor data, the frame runs as it is (the generator
# cannot be handed to CPython at a break): never a wrong value.
expect("all() over tensor truth values", lambda t: t + 1 if all(v > 0 for v in t.sum(1)) else t - 1, (x,),
       graphs=0, breaks=1)
finish()
