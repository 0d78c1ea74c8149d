# Prints the PyTorch values that tests/test_ops_pool.c checks (pooling and batch norm).
# Run: /usr/bin/python3 tests/reference/pool_values.py (PyTorch 1.13; make test never needs it).
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=17)
# x: (i * 7) % 11 - 5 for i = 0 .. 39 as (1, 2, 5, 4), f64 (many ties); the C test builds it.
x = (torch.arange(40, dtype=torch.float64) * 7 % 11 - 5).reshape(1, 2, 5, 4)
# b: (i * 5) % 13 / 4 - 1 for i = 0 .. 23 as (2, 3, 2, 2), f64.
b = (torch.arange(24, dtype=torch.float64) * 5 % 13 / 4 - 1).reshape(2, 3, 2, 2)


def show(name, t):
    vals = ", ".join(repr(float(v)) for v in t.flatten().tolist())
    print(f"{name}: shape={tuple(t.shape)} dtype={t.dtype}\n  {vals}")


xg = x.clone().requires_grad_()
y, idx = F.max_pool2d(xg, (3, 2), (2, 1), (1, 1), return_indices=True)
show("max_pool2d(x, (3, 2), (2, 1), (1, 1))", y)
show("  indices", idx)
y.sum().backward()
show("  grad of sum", xg.grad)
show("max_pool2d(x, 2) (stride = kernel)", F.max_pool2d(x, 2))
for inc in (True, False):
    show(f"avg_pool2d(x, 3, 2, 1, count_include_pad={inc})",
         F.avg_pool2d(x, 3, 2, 1, count_include_pad=inc))
xg = x.clone().requires_grad_()
F.avg_pool2d(xg, 3, 2, 1, count_include_pad=False).sum().backward()
show("  grad of sum (count_include_pad=False)", xg.grad)
show("adaptive_avg_pool2d(x, (3, 3))", F.adaptive_avg_pool2d(x, (3, 3)))
xg = x.clone().requires_grad_()
F.adaptive_avg_pool2d(xg, (3, 3)).sum().backward()
show("  grad of sum", xg.grad)

w = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
bias = torch.tensor([0.0, 1.0, -1.0], dtype=torch.float64)
rm = torch.tensor([0.5, -0.5, 0.0], dtype=torch.float64)
rv = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
show("batch_norm(b, training, momentum 0.1, eps 1e-5)",
     F.batch_norm(b, rm, rv, w, bias, True, 0.1, 1e-5))
show("  running_mean", rm)
show("  running_var", rv)
show("batch_norm(b, eval) with those", F.batch_norm(b, rm, rv, w, bias, False, 0.1, 1e-5))
b2 = b.reshape(4, 6)[:, :3]
rm2 = torch.zeros(3, dtype=torch.float64)
rv2 = torch.ones(3, dtype=torch.float64)
show("batch_norm(b (4, 6)[:, :3], training, no affine, momentum 0.2)",
     F.batch_norm(b2, rm2, rv2, None, None, True, 0.2, 1e-3))
show("  running_mean", rm2)
show("  running_var", rv2)
