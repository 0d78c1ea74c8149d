# Prints the PyTorch values that tests/test_ops_layout.c checks (creation and layout ops).
# Run: /usr/bin/python3 tests/reference/layout_values.py (PyTorch 1.13; make test never needs it).
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=17)
# x: 0, 1, ..., 11 as (3, 4), f64; the C test builds the same.
x = torch.arange(12, dtype=torch.float64).reshape(3, 4)
x3 = torch.arange(24, dtype=torch.float64).reshape(2, 3, 4)


def show(name, t):
    vals = ", ".join(repr(float(v)) for v in t.flatten().tolist())
    print(f"{name}: shape={tuple(t.shape)} dtype={t.dtype}\n  {vals}")


show("eye(3, 4)", torch.eye(3, 4))
show("linspace(-1, 1, 7) f32", torch.linspace(-1, 1, 7, dtype=torch.float32))
show("linspace(0, 1, 10) f32", torch.linspace(0, 1, 10, dtype=torch.float32))
show("linspace(0, 1, 10) f64", torch.linspace(0, 1, 10, dtype=torch.float64))
show("linspace(0.1, 2.3, 6) f64", torch.linspace(0.1, 2.3, 6, dtype=torch.float64))
show("linspace(3, 5, 1) f64", torch.linspace(3, 5, 1, dtype=torch.float64))
show("linspace(0, 10, 4) i64", torch.linspace(0, 10, 4, dtype=torch.int64))
show("linspace(-5, 5, 4) i64", torch.linspace(-5, 5, 4, dtype=torch.int64))
show("one_hot([2, 0, 1], -1)", F.one_hot(torch.tensor([2, 0, 1])))
show("one_hot([[1], [3]], 5)", F.one_hot(torch.tensor([[1], [3]]), 5))
show("tril(x, 0)", torch.tril(x))
show("tril(x, -1)", torch.tril(x, -1))
show("triu(x, 1)", torch.triu(x, 1))
show("triu(x3, -1)", torch.triu(x3, -1))
show("tril(x, 10)", torch.tril(x, 10))
show("triu(x, 10)", torch.triu(x, 10))
show("repeat(x[0:2, 0:2], (2, 1, 3))", x[0:2, 0:2].repeat(2, 1, 3))
show("tile(x[0], (2,))", torch.tile(x[0], (2,)))
show("tile(x3, (2,))", torch.tile(x3, (2,)))
show("flip(x3, (0, 2))", torch.flip(x3, (0, 2)))
show("roll(x, 1, 1)", torch.roll(x, 1, 1))
show("roll(x, -5, 0)", torch.roll(x, -5, 0))
show("roll(x, (1, 2), (0, 1))", torch.roll(x, (1, 2), (0, 1)))
show("pad(x, (1, 2), constant 9)", F.pad(x, (1, 2), value=9.0))
show("pad(x, (1, 0, 0, 2), constant 0)", F.pad(x, (1, 0, 0, 2)))
show("pad(x, (-1, 1)) constant", F.pad(x, (-1, 1)))
# reflect needs a batch dim in PyTorch 1.13 for 2-d padding: (1, 3, 4)
show("pad(x, (2, 3, 1, 2), reflect)", F.pad(x[None], (2, 3, 1, 2), mode="reflect")[0])
show("pad(x, (3, 0), reflect)", F.pad(x, (3, 0), mode="reflect"))
print("split(x, 3, 1) sizes", [tuple(t.shape) for t in torch.split(x, 3, 1)])
print("chunk(arange(5), 3) sizes", [tuple(t.shape) for t in torch.chunk(torch.arange(5), 3)])
print("chunk(arange(6), 4) sizes", [tuple(t.shape) for t in torch.chunk(torch.arange(6), 4)])
print("chunk(zeros(0), 3) sizes", [tuple(t.shape) for t in torch.chunk(torch.zeros(0), 3)])
print("split(zeros(0), 2) sizes", [tuple(t.shape) for t in torch.split(torch.zeros(0), 2)])
show("unbind(x3, 1)[2]", torch.unbind(x3, 1)[2])
show("movedim(x3, 0, 2)", torch.movedim(x3, 0, 2))
show("movedim(x3, -1, 0)", torch.movedim(x3, -1, 0))
show("diagonal(x, 1)", torch.diagonal(x, 1))
show("diagonal(x, -2)", torch.diagonal(x, -2))
show("diagonal(x, 5)", torch.diagonal(x, 5))
show("diagonal(x3, 0, 0, 2)", torch.diagonal(x3, 0, 0, 2))
