# Prints the PyTorch 1.13 values that tests/test_ops_gaps.c checks: sums of integer and bool
# tensors, sort / topk / cumsum / cumprod of integer tensors, movedim with lists, roll without
# dims (make test never runs this).
# /usr/bin/python3 tests/reference/gaps_values.py
import torch


def show(name, t):
    print(name, str(t.dtype).replace("torch.", ""), list(t.shape), t.reshape(-1).tolist())


b = torch.tensor([[True, False, True], [True, True, False]])
i = torch.tensor([[3, -1, 7], [2, 2, -5]], dtype=torch.int32)
big = torch.tensor([2**62, 2**62, 2**62, 5], dtype=torch.int64)
show("sum_bool", b.sum())
show("sum_bool_dim0", b.sum(0))
show("sum_i32_dim1_keepdim", i.sum(1, keepdim=True))
show("sum_i64_wraps", big.sum())
show("sum_i64_exact", torch.tensor([2**53 + 1, 1], dtype=torch.int64).sum())
for name, t in (("mean_bool", b), ("mean_i32", i)):
    try:
        t.mean()
    except RuntimeError as e:
        print(name, "error:", str(e).splitlines()[0])

s = torch.tensor([[3, -1, 7, -1], [2, 9, 2, 0]], dtype=torch.int32)
v, k = torch.sort(s, dim=1, stable=True)
show("sort_values", v)
show("sort_indices", k)
v, k = torch.sort(s, dim=0, descending=True, stable=True)
show("sort_desc_dim0_values", v)
show("sort_desc_dim0_indices", k)
l = torch.tensor([2**60 + 1, 2**60, -(2**62), 2**60 + 1], dtype=torch.int64)
v, k = torch.sort(l, dim=0, stable=True)
show("sort_i64_values", v)
show("sort_i64_indices", k)
t = torch.tensor([[3, -1, 7, -2], [2, 9, 4, 0]], dtype=torch.int32)  # no ties: topk's tie
v, k = torch.topk(t, 2, 1)                                             # order is unspecified
show("topk_values", v)
show("topk_indices", k)
v, k = torch.topk(t, 1, 1, largest=False)
show("topk_smallest_values", v)
show("topk_smallest_indices", k)
show("cumsum_i32_dim1", torch.cumsum(s, 1))
show("cumsum_bool_dim0", torch.cumsum(b, 0))
show("cumprod_i32_dim0", torch.cumprod(s, 0))

x = torch.arange(24.0).reshape(2, 3, 4)
show("movedim_01_to_21", torch.movedim(x, (0, 1), (2, 1)))
x2 = torch.arange(12.0).reshape(2, 1, 3, 2)
show("movedim_-1_0_to_1_3", torch.movedim(x2, (-1, 0), (1, 3)))
show("roll_flat_2", torch.roll(x[0], 2))
show("roll_flat_-7", torch.roll(x[0], -7))
