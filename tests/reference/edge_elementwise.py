# Prints PyTorch's values at the edges of the elementwise ops (NaN, +-inf, signed zeros), the
# numbers test_edge_* in tests/test_ops_elementwise.c assert. Run with torch 1.13:
#     /usr/bin/python3 tests/reference/edge_elementwise.py
# Each line: op, dtype, then the forward values and the gradient(s) for a gradient of ones.
# Tensors of 32 elements, so that PyTorch's vectorized paths run (the first 4-5 are printed).
import torch
import torch.nn.functional as F

nan, inf = float("nan"), float("inf")


def leaf(vals, dt, reps=8):
    return torch.tensor(vals * reps, dtype=dt, requires_grad=True)


def show(name, dt, n, *ts):
    print(name, str(dt).replace("torch.", ""), " | ".join(repr(t[:n].tolist()) for t in ts))


for dt in (torch.float32, torch.float64):
    for f in (torch.maximum, torch.minimum):
        a = leaf([nan, 1.0, nan, 2.0, 1.0], dt)
        b = leaf([0.0, nan, nan, 1.0, 1.0], dt)
        y = f(a, b)
        y.backward(torch.ones_like(y))
        show(f.__name__, dt, 5, y.detach(), a.grad, b.grad)
    x = leaf([nan, -1.0, 0.0, 2.0], dt)
    y = torch.relu(x)
    y.backward(torch.ones_like(y))
    show("relu", dt, 4, y.detach(), x.grad)
    for p in (0.5, -0.5, 2.0, 3.0):
        x = leaf([0.0, -0.0, -2.0, 4.0], dt)
        y = x.pow(p)
        y.backward(torch.ones_like(y))
        show("pow_scalar(%g)" % p, dt, 4, y.detach(), x.grad)
    for approx in ("none", "tanh"):
        x = leaf([inf, -inf, 1e4, -1e4, nan, 0.0, 1.0, -1.0], dt, 4)
        y = F.gelu(x, approximate=approx)
        y.backward(torch.ones_like(y))
        show("gelu" if approx == "none" else "gelu_tanh", dt, 5, y.detach(), x.grad)
