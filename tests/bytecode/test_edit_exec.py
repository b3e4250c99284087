"""Edited bytecode still runs: instruction insertion moves jumps correctly.

Each function below exercises one control-flow feature of 3.11 bytecode
(loops, break/continue, try/except/finally, with, nested handlers,
comprehensions, closures, generators, coroutines, match, long jumps).
For each, the code object and every code object nested in it is rewritten
by the C++ assembler (_tracejit._bc_insert_nops: NOPs inserted before every
n-th instruction, which shifts every jump and exception range; 300 NOPs at
a time force EXTENDED_ARG on jumps) and by a plain decode->assemble round
trip, and the rewritten function must return (or raise) exactly what the
original does. A hand-assembled function (_tracejit._bc_assemble) and
line numbers of original instructions are checked too.
Exits non-zero on any failure.
"""
import asyncio
import contextlib
import dis
import sys
import types

import _tracejit


# ---- subjects -------------------------------------------------------------

def loops(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        j = 0
        while j < i:
            total += j * i
            j += 1
            if total > 10_000:
                break
    return total


def try_except_finally(xs):
    log = []
    for x in xs:
        try:
            try:
                log.append(10 // x)
            except ZeroDivisionError as e:
                log.append(type(e).__name__)
                raise KeyError(x) from e
            finally:
                log.append("inner-finally")
        except KeyError as k:
            log.append(("key", k.args))
        except TypeError:
            log.append("type")
            continue
        else:
            log.append("else")
        finally:
            log.append("outer-finally")
    return log


def with_blocks(n):
    events = []

    @contextlib.contextmanager
    def ctx(tag):
        events.append(("enter", tag))
        try:
            yield tag
        except ValueError:
            events.append(("swallowed", tag))
        finally:
            events.append(("exit", tag))

    for i in range(n):
        with ctx(i) as a, ctx(-i) as b:
            events.append(a + b)
            if i == 1:
                raise ValueError(i)
    return events


def comprehensions(n):
    squares = [i * i for i in range(n) if i % 2]
    table = {i: [j for j in range(i)] for i in range(n)}
    pairs = {(a, b) for a in range(n) for b in range(a) if (a + b) % 3}
    gen_sum = sum(x for x in range(n) if x > 2)
    return squares, table, sorted(pairs), gen_sum


def closures(n):
    counter = 0

    def bump(k):
        nonlocal counter
        counter += k
        return counter

    fns = [lambda x, i=i: x + i + counter for i in range(n)]
    results = [bump(i) for i in range(n)]
    return results, [f(10) for f in fns]


def generator_user(n):
    def gen(m):
        total = 0
        for i in range(m):
            try:
                received = yield i
            except RuntimeError:
                received = -1
            total += received or 0
        return total

    def delegate(m):
        result = yield from gen(m)
        yield ("done", result)

    out = []
    g = delegate(n)
    out.append(next(g))
    for k in range(1, n + 2):
        try:
            out.append(g.send(k) if k % 2 else g.throw(RuntimeError("x")))
        except StopIteration:
            break
    return out


def coroutine_user(n):
    async def leaf(i):
        await asyncio.sleep(0)
        if i == 3:
            raise ValueError(i)
        return i * 2

    async def agen(m):
        for i in range(m):
            yield i

    async def main():
        out = []
        async for v in agen(n):
            try:
                out.append(await leaf(v))
            except ValueError as e:
                out.append(("err", e.args))
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(out.append, "closed")
        return out

    return asyncio.run(main())


def pattern_match(values):
    out = []
    for v in values:
        match v:
            case 0 | 1:
                out.append("small")
            case [x, y, *rest]:
                out.append(("seq", x, y, len(rest)))
            case {"k": k, **others}:
                out.append(("map", k, sorted(others)))
            case str() as s if len(s) > 2:
                out.append(("str", s))
            case _:
                out.append("other")
    return out


def long_function(n):
    # Enough code that jumps across it need EXTENDED_ARG once NOPs are added.
    acc = 0
    for i in range(n):
        if i % 2:
            acc += i; acc -= 1; acc *= 1; acc += 2; acc -= 2; acc += i % 5
            acc += i; acc -= 1; acc *= 1; acc += 2; acc -= 2; acc += i % 7
        else:
            acc -= i; acc += 1; acc *= 1; acc -= 2; acc += 2; acc -= i % 3
    return acc


def kwargs_and_globals(n):
    return dict(a=n, b=sorted([3, 1, 2], reverse=True), c=max(range(n), default=None)), len(
        str(n).zfill(5))


SUBJECTS = [
    (loops, (20,)),
    (try_except_finally, ([1, 0, "s", 5],)),
    (with_blocks, (3,)),
    (comprehensions, (7,)),
    (closures, (4,)),
    (generator_user, (4,)),
    (coroutine_user, (5,)),
    (pattern_match, ([0, [1, 2, 3, 4], {"k": 1, "z": 2}, "abcd", "ab", 3.5],)),
    (long_function, (30,)),
    (kwargs_and_globals, (9,)),
]

# (every_n, count): NOPs before every n-th instruction.
EDITS = [(1, 1), (2, 1), (3, 2), (7, 1), (5, 300)]


# ---- machinery --------------------------------------------------------------

def rewrite(code, transform):
    """`transform` applied to `code` and, first, to every code object in its constants."""
    consts = tuple(rewrite(c, transform) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return transform(code.replace(co_consts=consts))


def outcome(fn, args):
    try:
        return ("ok", fn(*args))
    except Exception as e:  # compared by type and args
        return ("raised", type(e).__name__, e.args)


def with_code(fn, code):
    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def has_op(code, opcodes):
    """Whether `code` or a code object nested in it uses one of `opcodes`."""
    if any(i.opcode in opcodes for i in dis.get_instructions(code)):
        return True
    return any(has_op(c, opcodes) for c in code.co_consts if isinstance(c, types.CodeType))


def original_lines(code):
    """Line of every original instruction of `code` and its nested code objects."""
    lines = [ins.positions.lineno for ins in dis.get_instructions(code)
             if ins.opname not in ("NOP", "EXTENDED_ARG")]
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            lines.append(original_lines(c))
    return lines


def check_subjects(failures):
    checked = 0
    for fn, args in SUBJECTS:
        expected = outcome(fn, args)
        variants = [("roundtrip", _tracejit._bc_roundtrip)]
        variants += [(f"nops every {n} x{k}", lambda c, n=n, k=k: _tracejit._bc_insert_nops(c, n, k))
                     for n, k in EDITS]
        for label, transform in variants:
            try:
                code = rewrite(fn.__code__, transform)
            except Exception as e:
                failures.append(f"{fn.__name__} [{label}]: assemble failed: {e}")
                continue
            got = outcome(with_code(fn, code), args)
            if got != expected:
                failures.append(f"{fn.__name__} [{label}]: {got!r} != {expected!r}")
            # Line numbers of the original instructions survive the edit.
            if [ln for ln in original_lines(code)] != original_lines(fn.__code__):
                failures.append(f"{fn.__name__} [{label}]: line numbers changed")
            if (label.endswith("x300") and has_op(fn.__code__, dis.hasjrel)
                    and not has_op(code, [dis.opmap["EXTENDED_ARG"]])):
                failures.append(f"{fn.__name__} [{label}]: expected EXTENDED_ARG jumps")
            checked += 1
    return checked


def check_hand_assembled(failures):
    # def f(n): total = 0; i = n; while i: total += i; i -= 1; return total
    def template(n):
        total = 0
        return total

    rows = [
        ("RESUME", 0, None, None),                  # 0
        ("LOAD_CONST", 0, 0, None),                 # 1
        ("STORE_FAST", 0, "total", None),           # 2
        ("LOAD_FAST", 0, "n", None),                # 3
        ("STORE_FAST", 0, "i", None),               # 4  new local
        ("LOAD_FAST", 0, "i", None),                # 5  loop head
        ("POP_JUMP_FORWARD_IF_FALSE", 0, None, 16), # 6
        ("LOAD_FAST", 0, "total", None),            # 7
        ("LOAD_FAST", 0, "i", None),                # 8
        ("BINARY_OP", 13, None, None),              # 9  +=
        ("STORE_FAST", 0, "total", None),           # 10
        ("LOAD_FAST", 0, "i", None),                # 11
        ("LOAD_CONST", 0, 1, None),                 # 12
        ("BINARY_OP", 23, None, None),              # 13 -=
        ("STORE_FAST", 0, "i", None),               # 14
        ("JUMP_FORWARD", 0, None, 5),               # 15 (assembler turns it backward)
        ("LOAD_FAST", 0, "total", None),            # 16
        ("RETURN_VALUE", 0, None, None),            # 17
    ]
    try:
        code = _tracejit._bc_assemble(template.__code__, rows)
    except Exception as e:
        failures.append(f"hand-assembled: {e}")
        return
    fn = with_code(template, code)
    if fn(10) != 55 or fn(0) != 0:
        failures.append(f"hand-assembled: f(10) = {fn(10)}")
    if code.co_varnames != ("n", "total", "i") or code.co_stacksize != 2:
        failures.append(f"hand-assembled: varnames {code.co_varnames} stacksize {code.co_stacksize}")
    if "JUMP_BACKWARD" not in {i.opname for i in dis.get_instructions(code)}:
        failures.append("hand-assembled: backward jump not flipped")


def main():
    failures = []
    checked = check_subjects(failures)
    check_hand_assembled(failures)
    print(f"{checked} edited code objects run, plus a hand-assembled one")
    if failures:
        for f in failures[:20]:
            print("  FAIL " + f)
        return 1
    print("edited bytecode behaves like the original")
    return 0


if __name__ == "__main__":
    sys.exit(main())
