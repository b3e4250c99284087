"""Python object semantics through compiled frames (issue 18, items 3, 9, 13,
15, 16): each case runs eagerly and compiled (twice: trace, then cache hit)
from the same fresh state and must return and leave behind the same things.

Beyond the minimized regression programs: a generator (or enumerate, zip,
list iterator) returned, a generator looped over, locals() after a graph break, a nonlocal written through an inlined
closure, a class attribute written on a base class and read through a
subclass instance, a property written in the frame, dict views, one list
reachable through two globals, a key removed through __dict__."""
import sys
import types

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish


def describe(v):
    """A comparable picture of a result (tensors by value, generators by type and items)."""
    if isinstance(v, torch.Tensor):
        return ("tensor", v.tolist())
    if hasattr(v, "__next__"):  # generators and other iterators: their type and what they yield
        return (type(v).__name__, [describe(x) for x in v])
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [describe(x) for x in v])
    if isinstance(v, dict):
        return ("dict", [(k, describe(x)) for k, x in v.items()])
    return v


def same(fn, make_args, reset=lambda: None, state=lambda: None, what=None):
    what = what or fn.__name__
    reset()
    want = (describe(fn(*make_args())), state())
    compiled = tracejit.compile(fn, backend=BACKEND)
    for call in ("first call", "cache hit"):
        reset()
        got = (describe(compiled(*make_args())), state())
        check_equal(got, want, f"{what} ({call})")


def x1():
    return (torch.ones(2),)


# --- item 13: a generator expression returned stays a generator
def returns_generator(x):
    y = x + 1
    return (y * i for i in range(3))


def returns_iterators(x):
    g = (x * i for i in range(2))
    return iter(g), enumerate([x, x + 1]), zip([x], [x + 2]), iter([x, x + 3])


def loops_over_generator(x):
    out = []
    for v in (x * i for i in range(3)):
        print("item", v.sum().item())  # a graph break inside the loop
        out.append(v)
    return out


# --- item 15: locals() after a graph break sees every local, no internal name
def locals_after_break(x):
    y = x * 2
    print("brk")
    z = y + 1
    return sorted(locals()), locals()["y"] + z


def vars_of_frame(x):
    y = x * 3
    return sorted(vars())


# --- item 3: the compiled function's own free variable written and closed over
def make_counter():
    count = 0

    def bump(x):
        nonlocal count
        count += 1
        read = lambda: count  # noqa: E731
        return x * read(), [count * i for i in range(2)]

    return bump, lambda: count


bump, counter_value = make_counter()


# --- item 16: class attributes, properties, identity of inputs
class Base:
    shared = 1


class Derived(Base):
    pass


d = Derived()


def base_write_subclass_read(x):
    Base.shared = 3
    return x * d.shared, x * Derived.shared, x * type(d).shared


def method_put_on_class(x):
    Derived.scale = lambda self: 4  # noqa: E731
    return x * d.scale()


class WithProperty:
    def __init__(self):
        self._v = 1

    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        self._v = value * 2


p = WithProperty()


def property_write(x):
    p.v = 3
    return x * p.v


class Plain:
    pass


o = Plain()


def dict_then_attr(x):
    o.__dict__["k"] = 7
    o.j = o.k + 1
    return x * o.j, sorted(vars(o))


def new_class_attr(x):
    Plain.fresh = 5
    return x * Plain.fresh, x * o.fresh, hasattr(o, "fresh")


class Slotted:
    __slots__ = ("a",)


slotted = Slotted()


def slot_write(x):
    slotted.a = 2
    return x * slotted.a


def removed_through_dict(x):
    o.__dict__.clear()
    return hasattr(o, "k"), x + 1


def views_are_live(x):
    d = {"a": x}
    ks, vs, its = d.keys(), d.values(), d.items()
    d["b"] = x + 1
    return len(ks), "b" in ks, list(vs), [k for k, _ in its], sorted(d.keys())


A = []
B = A


def list_through_two_globals(x):
    A.append(1)
    return len(B), B is A, x + len(B)


def frame_lineno(x):
    frame = sys._getframe()
    y = x + 1
    return frame.f_lineno, y


# --- item 16: dict views returned are live views of their dict, and the
# tensor work around them is still compiled
def returns_views_of_input(x, d):
    d["a"] = x + 1
    return d.keys(), d.values(), d.items(), x * 2


def returns_views_of_new_dict(x):
    d = {"p": x * 3}
    return d, d.items(), d.keys()


def check_dict_views():
    tracejit.reset()
    compiled = tracejit.compile(returns_views_of_input, backend=BACKEND)
    for fn, what in ((returns_views_of_input, "eager"), (compiled, "compiled"), (compiled, "compiled, cache hit")):
        d = {"z": 0}
        keys, values, items, y = fn(torch.ones(2), d)
        d["late"] = 5  # a live view sees it
        check_equal((type(keys).__name__, list(keys), describe(list(values)), describe(list(items)), y.tolist()),
                    ("dict_keys", ["z", "a", "late"], describe([0, torch.full((2,), 2.0), 5]),
                     describe([("z", 0), ("a", torch.full((2,), 2.0)), ("late", 5)]), [2.0, 2.0]),
                    f"views of the caller's dict are live ({what})")
    c = tracejit.counters()
    check_equal((c["graphs_compiled"], c["graph_breaks"]), (1, 0), "views of the caller's dict: one graph, no break")
    compiled = tracejit.compile(returns_views_of_new_dict, backend=BACKEND)
    for fn, what in ((returns_views_of_new_dict, "eager"), (compiled, "compiled")):
        d, items, keys = fn(torch.ones(2))
        d["q"] = 2
        check_equal((list(keys), describe(list(items))), (["p", "q"], describe([("p", torch.full((2,), 3.0)), ("q", 2)])),
                    f"views of a dict the frame made watch the returned dict ({what})")


def main():
    check_dict_views()
    compiled = tracejit.compile(returns_generator, backend=BACKEND)(torch.ones(2))
    check(isinstance(compiled, types.GeneratorType), f"a returned generator expression is a generator ({type(compiled).__name__})")
    same(returns_generator, x1)
    same(returns_iterators, x1)
    same(loops_over_generator, x1)
    same(locals_after_break, x1)
    same(vars_of_frame, x1)

    def reset_counter():
        global bump, counter_value
        bump, counter_value = make_counter()
    same(lambda x: bump(x), x1, reset_counter, lambda: counter_value(), "nonlocal written and closed over")

    def reset_classes():
        Base.shared = 1
        if "scale" in Derived.__dict__:
            del Derived.scale
    same(base_write_subclass_read, x1, reset_classes, lambda: (Base.shared, "shared" in Derived.__dict__))
    same(method_put_on_class, x1, reset_classes)
    same(property_write, x1, lambda: setattr(p, "_v", 1), lambda: p._v)

    def reset_o():
        o.__dict__.clear()
        o.k = 1
    same(dict_then_attr, x1, reset_o, lambda: dict(vars(o)))
    same(removed_through_dict, x1, reset_o, lambda: dict(vars(o)))

    def reset_plain():
        reset_o()
        if "fresh" in Plain.__dict__:
            del Plain.fresh
    same(new_class_attr, x1, reset_plain, lambda: Plain.__dict__.get("fresh"))
    same(slot_write, x1, lambda: setattr(slotted, "a", 1), lambda: slotted.a)
    same(views_are_live, x1)
    same(list_through_two_globals, x1, lambda: A.clear(), lambda: list(B))
    same(frame_lineno, x1)
    finish()


main()
