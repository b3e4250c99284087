"""Issue 11: instances of user-defined classes made inside the traced
function: __init__ inlined, attributes tracked, methods, classmethods,
staticmethods, properties, class attributes, inheritance with super(),
dunder methods (__add__/__radd__/__iadd__, __getitem__/__setitem__,
__len__, __bool__, __call__, __neg__), dataclasses; an object that escapes
(returned, stored on a pre-existing object, live at a graph break) is made
again after the graph with its attributes, once per object."""
import dataclasses

import torch

import tracejit
from capture_util import expect
from e2e_util import BACKEND, check, check_equal, finish

x = torch.randn(4, 6)


class Scale:
    offset = 3

    def __init__(self, s):
        self.s = s

    def apply(self, t):
        return t * self.s + self.offset

    @classmethod
    def make(cls, s):
        return cls(s * 2)

    @staticmethod
    def helper(t):
        return t - 1

    @property
    def double(self):
        return self.s * 2

    def __add__(self, other):
        if isinstance(other, Scale):
            return Scale(self.s + other.s)
        return NotImplemented

    def __radd__(self, other):
        return Scale(self.s + other)

    def __getitem__(self, i):
        return self.s * i

    def __len__(self):
        return 2

    def __call__(self, t):
        return t * self.s

    def __neg__(self):
        return Scale(-self.s)


class Acc:
    def __init__(self):
        self.total = None
        self.n = 0

    def add(self, t):
        self.total = t if self.total is None else self.total + t
        self.n += 1
        return self

    def __iadd__(self, t):
        return self.add(t)

    def __bool__(self):
        return self.n > 0

    def __setitem__(self, k, v):
        setattr(self, k, v)


class Base:
    def __init__(self, w):
        self.w = w

    def scale(self, t):
        return t * self.w


class Child(Base):
    def __init__(self, w, b):
        super().__init__(w)
        self.b = b

    def scale(self, t):
        return super().scale(t) + self.b


@dataclasses.dataclass
class Cfg:
    a: int
    b: float = 2.0
    tags: list = dataclasses.field(default_factory=list)


expect("method of a new object", lambda t: Scale(2).apply(t), (x,))
expect("classmethod constructing cls(...)", lambda t: Scale.make(2).apply(t), (x,))
expect("staticmethod through an instance", lambda t: Scale(1).helper(t), (x,))
expect("property", lambda t: t * Scale(3).double, (x,))
expect("class attribute through the instance", lambda t: t + Scale(1).offset, (x,))
expect("__add__ between objects", lambda t: (Scale(2) + Scale(3)).apply(t), (x,))
expect("__radd__ with an int", lambda t: (1 + Scale(2)).apply(t), (x,))
expect("__getitem__ and __len__", lambda t: t * Scale(2)[3] + len(Scale(1)), (x,))
expect("__call__", lambda t: Scale(2)(t), (x,))
expect("__neg__", lambda t: (-Scale(2)).apply(t), (x,))
expect("isinstance and type() of a new object", lambda t: t * (isinstance(Scale(1), Scale) + (type(Scale(1)) is Scale)), (x,))
expect("hasattr/getattr with a default", lambda t: t * (hasattr(Scale(1), "s") + getattr(Scale(1), "zz", 5)), (x,))


def accumulate(t):
    acc = Acc()
    if acc:
        t = t + 100
    for k in range(3):
        acc += t * k
    acc["extra"] = 7
    return acc.total * acc.n + acc.extra if acc else t


expect("__iadd__, __bool__, __setitem__ and attribute updates", accumulate, (x,))
expect("inheritance with super().__init__ and super().method", lambda t: Child(2, 1).scale(t), (x,))


def dataclass_fn(t):
    c = Cfg(3)
    c.tags.append(t)
    return c.tags[0] * c.a + c.b


expect("dataclass with defaults and default_factory", dataclass_fn, (x,))


# --- objects that leave the graph


def returns_object(t):
    s = Scale(2)
    s.out = t * 2
    return s, s


def check_escape():
    tracejit.reset()
    a, b = tracejit.compile(returns_object, backend=BACKEND)(x)
    check(type(a) is Scale and a is b, "returned object: one Scale instance reached twice")
    check_equal(list(vars(a)), ["s", "out"], "returned object: attributes in assignment order")
    check(a.s == 2 and torch.allclose(a.out, x * 2), "returned object: attribute values")
    ex = tracejit.explain(returns_object)(x)
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "returned object: graphs/breaks")


check_escape()


class Holder:
    pass


def stores_on_input(h, t):
    h.cfg = Cfg(1, 0.5)
    return t + h.cfg.b


def check_store_on_input():
    tracejit.reset()
    h1, h2 = Holder(), Holder()
    want = stores_on_input(h1, x)
    got = tracejit.compile(stores_on_input, backend=BACKEND)(h2, x)
    check(torch.allclose(want, got), "object stored on an input: value")
    check(h2.cfg == h1.cfg and type(h2.cfg) is Cfg, "object stored on an input: rebuilt equal (dataclass __eq__)")
    h3 = Holder()
    ex = tracejit.explain(stores_on_input)(h3, x)
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "object stored on an input: graphs/breaks")


check_store_on_input()


def live_at_break(t):
    s = Scale(3)
    y = s.apply(t)
    print("break here")
    return s.apply(y)


expect("object live across a graph break", live_at_break, (x,), graphs=2, breaks=1)


def self_reference(t):
    s = Scale(2)
    s.me = s
    return s


def check_self_reference():
    tracejit.reset()
    got = tracejit.compile(self_reference, backend=BACKEND)(x)
    check(got.me is got and got.s == 2, "an object referring to itself: right object (frame run in CPython)")
    ex = tracejit.explain(self_reference)(x)
    check(any("refers to itself" in r.reason for r in ex.break_reasons), "an object referring to itself: reason")


check_self_reference()


# --- classes the tracer does not model: a break naming why, right values


class WithNew:
    def __new__(cls, v):
        o = super().__new__(cls)
        o.v = v
        return o


class WithSlots:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: int


# The break is at the call, before any tensor work (no graph there); the
# rest of the frame is one graph. WithNew's __new__ is traced on its own
# and breaks at super().__new__ (an object without a source).
for cls, why, breaks in [(WithNew, "__new__", 2), (WithSlots, "__slots__", 1), (Frozen, "__setattr__", 1)]:
    def uses(t, cls=cls):
        return t * cls(2).v if cls is not Frozen else t * cls(2).a

    ex = expect(f"{cls.__name__} (not modelled)", uses, (x,), graphs=1, breaks=breaks)
    check(any(why in r.reason for r in ex.break_reasons), f"{cls.__name__}: the reason names {why}")

finish()
