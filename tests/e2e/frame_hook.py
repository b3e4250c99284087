"""The PEP 523 frame hook: transformed code is honoured and cached; Python
keeps working (recursion, exceptions, generators, threads, sys.settrace,
re-entrancy, disable, skip files) with the hook installed."""
import json
import sys
import threading

import _tracejit
import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish

seen = []  # code names the callback was asked about


def identity_callback(code, args):
    seen.append(code.co_name)
    return code  # run the original code through the transformed-code path


# 1. A callback that swaps in other code is honoured, and its result cached.
def forty_two(a, b):
    return 42


def add(a, b):
    return a + b


def swap_callback(code, args):
    seen.append(code.co_name)
    return forty_two.__code__ if code.co_name == "add" else None


_tracejit._set_frame_callback(swap_callback)
compiled_add = tracejit.compile(add, backend=BACKEND)
check_equal(compiled_add(1, 2), 42, "transformed code replaces the frame")
check_equal(compiled_add(5, 6), 42, "cached transformed code on the second call")
check_equal(seen.count("add"), 1, "callback consulted once (then a cache hit)")
check_equal(add(1, 2), 3, "the original function is unchanged outside tracejit.compile")
check(tracejit.counters()["cache_hits"] >= 1, "cache_hits counter counts the hit")
tracejit.reset()
seen.clear()
check_equal(compiled_add(1, 2), 42, "after reset the callback is asked again")
check_equal(seen.count("add"), 1, "reset forgot the cache entry")

# 1b. The transformed code is built by tracejit's own assembler.
def sub(a, b):
    return a - b


def assembled_callback(code, args):
    if code.co_name != "sub":
        return None
    # RESUME 0; LOAD_CONST 1234; RETURN_VALUE, assembled over sub's code.
    return _tracejit._bc_assemble(code, [("RESUME", 0, None, None), ("LOAD_CONST", 0, 1234, None),
                                         ("RETURN_VALUE", 0, None, None)])


_tracejit._set_frame_callback(assembled_callback)
tracejit.reset()
check_equal(tracejit.compile(sub, backend=BACKEND)(10, 3), 1234, "code from the assembler replaces the frame")
check_equal(sub(10, 3), 7, "the original is untouched")

# 2. Identity transform over every kind of signature, closure and cell.
_tracejit._set_frame_callback(identity_callback)
tracejit.reset()


def make_closure(k):
    def inner(a, b=2, *rest, c, d=4, **kw):
        captured = [a]

        def use_cell():
            return captured[0] + k

        return (a, b, rest, c, d, sorted(kw.items()), use_cell())

    return inner


inner = make_closure(10)
compiled_inner = tracejit.compile(inner, backend=BACKEND)
want = inner(1, 3, 5, 6, c=7, z=9)
check_equal(compiled_inner(1, 3, 5, 6, c=7, z=9), want, "varargs, kw-only, **kwargs, closure, cells")
check_equal(compiled_inner(1, c=0), inner(1, c=0), "defaults")
check("inner" in seen and "use_cell" in seen, "nested frames reach the callback")


class Counter:
    def __init__(self):
        self.n = 0

    @tracejit.compile(backend=BACKEND)
    def bump(self, by=1):
        self.n += by
        return self.n


c = Counter()
c.bump()
check_equal(c.bump(5), 6, "compiled method (descriptor binding)")


# 3. Recursion.
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)


check_equal(tracejit.compile(fib, backend=BACKEND)(15), 610, "recursion")
check_equal(tracejit.compile(depth, backend=BACKEND)(400), 400, "deep recursion")


# 4. Exceptions, raised and caught inside, and propagating out.
def raises(x):
    if x > 0:
        raise KeyError(x)
    return x


def catches(x):
    try:
        return raises(x)
    except KeyError as e:
        return ("caught", e.args[0])
    finally:
        pass


check_equal(tracejit.compile(catches, backend=BACKEND)(3), ("caught", 3), "exception caught inside")
err = check_raises(KeyError, lambda: tracejit.compile(raises, backend=BACKEND)(7), "exception propagates out")
tb_names = []
if err is not None:
    tb = err.__traceback__
    while tb is not None:
        tb_names.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
check("raises" in tb_names, f"traceback shows the user's frame ({tb_names})")


# 5. Generators run unchanged (never handed to the callback).
def gen(n):
    for i in range(n):
        yield i * i


def consume(n):
    return sum(gen(n)) + sum(x for x in range(n))


seen.clear()
check_equal(tracejit.compile(consume, backend=BACKEND)(5), consume(5), "generators and genexps")
check("gen" not in seen and "<genexpr>" not in seen, f"generator frames not given to the callback ({seen})")


# 6. Threads: each thread has its own active state.
results = {}


def work(i):
    results[i] = tracejit.compile(fib, backend=BACKEND)(12) + i


threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check_equal(results, {i: 144 + i for i in range(4)}, "compiled calls in four threads")
seen.clear()


def plain_thread():
    results["plain"] = add(2, 2)


t = threading.Thread(target=plain_thread)
t.start()
t.join()
check_equal(results["plain"], 4, "uncompiled thread")
check("plain_thread" not in seen and "add" not in seen, "frames outside compile are not given to the callback")

# 7. sys.settrace keeps working.
events = []


def tracer(frame, event, arg):
    if event == "call":
        events.append(frame.f_code.co_name)
    return None


sys.settrace(tracer)
try:
    value = tracejit.compile(fib, backend=BACKEND)(5)
finally:
    sys.settrace(None)
check_equal(value, 5, "result under sys.settrace")
check(events.count("fib") >= 15, f"settrace sees the calls ({events.count('fib')} fib calls)")


# 8. Re-entrancy: Python run by the callback is not traced.
def helper_in_callback(x):
    return x


def reentrant_callback(code, args):
    seen.append(code.co_name)
    helper_in_callback(1)
    return None


_tracejit._set_frame_callback(reentrant_callback)
tracejit.reset()
seen.clear()
check_equal(tracejit.compile(add, backend=BACKEND)(1, 1), 2, "callback that runs Python")
check("helper_in_callback" not in seen, "the callback's own calls are not traced")


# 9. disable and skip files.
@tracejit.disable
def disabled(x):
    return json.dumps({"x": x})


def calls_disabled(x):
    return disabled(x) + json.dumps([x])


seen.clear()
check_equal(tracejit.compile(calls_disabled, backend=BACKEND)(3), '{"x": 3}[3]', "disabled function result")
check("disabled" not in seen, "disabled function never traced")
check(not any(name in seen for name in ("dumps", "encode", "iterencode")), "standard-library frames skipped")
check("calls_disabled" in seen, "the compiled function itself is traced")


# 10. A failing callback raises at the call site; the process survives.
def failing_callback(code, args):
    raise RuntimeError("callback failed")


_tracejit._set_frame_callback(failing_callback)
tracejit.reset()
check_raises(RuntimeError, lambda: tracejit.compile(add, backend=BACKEND)(1, 2), "callback error raised")
_tracejit._set_frame_callback(None)

# 11. Installing and removing the hook.
check(_tracejit._hook_installed(), "hook installed by the first compiled call")
_tracejit._uninstall_hook()
check(not _tracejit._hook_installed(), "hook removed")
check_equal(add(2, 3), 5, "Python runs after removing the hook")
check_equal(tracejit.compile(add, backend=BACKEND)(2, 3), 5, "a compiled call re-installs the hook")
check(_tracejit._hook_installed(), "hook installed again")

finish()
