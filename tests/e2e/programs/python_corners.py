"""Corner cases of Python semantics mixed with tensors, run by python3.11
and by `tracejit --compile-all`: the transcripts must be identical."""
import math

import torch

torch.manual_seed(1)
LOG = []


class Shape:
    sides = 0

    def __init__(self, size):
        self.size = size

    @property
    def area(self):
        return self.size ** 2

    def describe(self):
        return f"{type(self).__name__}({self.size}) sides={self.sides} area={self.area:.2f}"


class Square(Shape):
    sides = 4

    def describe(self):
        return "square: " + super().describe()


def tensor_with_python(x, shapes):
    total = x.clone()
    for s in shapes:
        total = total * s.size + s.sides
        LOG.append(s.describe())
    return total


def loop_control(x):
    out = x
    for i in range(10):
        if i % 2:
            continue
        if i > 6:
            break
        out = out + i
    else:
        out = out * 100
    n = 0
    while n < 3:
        n += 1
    else:
        out = out - n
    return out


def exceptions_in_loops(x):
    results = []
    for i in range(4):
        try:
            if i == 2:
                raise ValueError(i)
            results.append(x * i)
        except ValueError as e:
            results.append(x - e.args[0])
        finally:
            LOG.append(f"iteration {i}")
    return torch.stack(results)


def unpacking(x):
    a, (b, c), *rest = x[0], x[1:3].unbind(0), *x[3:].unbind(0)
    first, *middle, last = [a, b, c] + rest
    d = {"a": a, **{"b": b}}
    return first + last + len(middle) + d["b"], sorted({1, 3, 2}), tuple(reversed(rest))


def numbers(x):
    k = math.ceil(2.5) + abs(-3) + max(1, 2, key=lambda v: -v) + round(2.675, 2) * 2
    return x * k, divmod(17, 5), pow(2, 10, 1000), int("7") + float("1.5")


def data_dependent_loops(x):
    steps = 0
    while x.sum() > 1:
        x = x / 2
        steps += 1
    return x, steps


def main():
    x = torch.arange(1.0, 7.0).reshape(6, 1)
    print("tensor_with_python", tensor_with_python(x[:2], [Square(2), Shape(3)]).flatten().tolist())
    print("loop_control", loop_control(torch.zeros(1)).tolist())
    print("exceptions_in_loops", exceptions_in_loops(torch.ones(2)).tolist())
    r = unpacking(x)
    print("unpacking", r[0].tolist(), r[1], [t.tolist() for t in r[2]])
    r = numbers(torch.ones(1))
    print("numbers", r[0].tolist(), r[1:])
    r = data_dependent_loops(torch.full((3,), 4.0))
    print("data_dependent_loops", r[0].tolist(), r[1])
    print("log", LOG)


main()
