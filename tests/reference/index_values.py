# Prints the PyTorch 1.13 values that tests/test_ops_index.c checks (make test never runs this).
# /usr/bin/python3 tests/reference/index_values.py
import torch

torch.set_printoptions(precision=10)
f64 = torch.float64


def show(name, t):
    print(name, list(t.shape), [round(v, 10) for v in t.reshape(-1).tolist()])


x = torch.tensor([[0.5, -1.0, 2.0, 0.25], [3.0, 0.0, -2.5, 1.5], [-0.5, 4.0, 1.0, -3.0]],
                 dtype=f64, requires_grad=True)

# gather with duplicates: values and the gradient of sum(w * y)
i = torch.tensor([[2, 2], [0, 3], [1, 1]])
y = torch.gather(x, 1, i)
show("gather", y)
w = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=f64)
(y * w).sum().backward()
show("gather_grad", x.grad)
x.grad = None

# scatter_add / index_add / scatter
src = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], dtype=f64,
                   requires_grad=True)
j = torch.tensor([[1, 1, 3], [0, 0, 0], [2, 3, 2]])
y = torch.scatter_add(x, 1, j, src)
show("scatter_add", y)
g = torch.arange(12, dtype=f64).reshape(3, 4)
(y * g).sum().backward()
show("scatter_add_grad_x", x.grad)
show("scatter_add_grad_src", src.grad)
x.grad = None

ii = torch.tensor([2, 0, 2])
y = torch.index_select(x, 0, ii)
show("index_select", y)
y = torch.index_select(x, 1, torch.tensor([3, 0]))
show("index_select1", y)
s2 = torch.tensor([[1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0], [0.5, -0.5, 0.5, -0.5]],
                  dtype=f64)
y = torch.index_add(x, 0, ii, s2, alpha=2.0)
show("index_add", y)
uj = torch.tensor([[1, 3], [0, 2], [2, 1]])
y = torch.scatter(x, 1, uj, src[:, :2].detach())
show("scatter", y)

# sort, argsort, topk (stable sort; NaN last ascending)
z = torch.tensor([[3.0, 1.0, 2.0, 1.0, 5.0], [0.0, -1.0, float("nan"), 4.0, -1.0]], dtype=f64)
v, k = torch.sort(z, dim=1, stable=True)
show("sort_values", v)
show("sort_indices", k)
v, k = torch.sort(z, dim=1, descending=True, stable=True)
show("sort_desc_values", v)
show("sort_desc_indices", k)
show("argsort_dim0", torch.sort(x.detach(), dim=0, stable=True)[1])
v, k = torch.topk(x.detach(), 2, dim=1)
show("topk_values", v)
show("topk_indices", k)
v, k = torch.topk(x.detach(), 2, dim=0, largest=False)
show("topk_small_values", v)
show("topk_small_indices", k)

# min, argmin, max(dim) with ties: the gradient goes to the returned index
show("amin_dim1", torch.amin(x.detach(), dim=1))
show("argmin_dim0", torch.argmin(x.detach(), dim=0))
t = torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], dtype=f64, requires_grad=True)
v, k = torch.max(t, dim=1)
show("max_dim_values", v)
show("max_dim_indices", k)
v.sum().backward()
show("max_dim_ties_grad", t.grad)
t.grad = None
v, k = torch.min(t, dim=0, keepdim=True)
show("min_dim_values", v)
show("min_dim_indices", k)
v.sum().backward()
show("min_dim_ties_grad", t.grad)
u = torch.tensor([[1.0, 3.0, 1.0], [2.0, 2.0, 5.0]], dtype=f64, requires_grad=True)
torch.amin(u, dim=1).sum().backward()
show("amin_ties_grad", u.grad)

# cumsum, cumprod, prod with zeros
c = torch.tensor([[2.0, 0.0, 3.0, -1.0], [0.5, 4.0, 0.0, 0.0]], dtype=f64, requires_grad=True)
show("cumsum1", torch.cumsum(c, 1))
show("cumsum0", torch.cumsum(c, 0))
y = torch.cumprod(c, 1)
show("cumprod1", y)
y.backward(torch.tensor([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 2.0, 1.0]], dtype=f64))
show("cumprod1_grad", c.grad)
c.grad = None
y = torch.prod(c, 1)
show("prod1", y)
y.sum().backward()
show("prod1_grad", c.grad)
c.grad = None
d = torch.tensor([[2.0, 0.5, 3.0], [1.5, 4.0, -2.0]], dtype=f64, requires_grad=True)
y = torch.prod(d)
show("prod_all", y)
y.backward()
show("prod_all_grad", d.grad)
