# Writes tests/reference/dtypes_values.h, the PyTorch 1.13 values that tests/test_ops_dtypes.c
# checks: indexing and selection on integer and bool data, all/any, and the integer reductions;
# prints what PyTorch rejects (make test never runs this).
# /usr/bin/python3 tests/reference/dtypes_values.py
import os

import torch

i32, i64, b = torch.int32, torch.int64, torch.bool
BIG = 2**53  # the first integer beyond which doubles skip values


OUT = []


def lit(v):
    return "INT64_MIN" if v == -(2**63) else f"{v}LL"


def show(name, t):
    vals = [int(v) for v in t.reshape(-1).tolist()]
    shape = ", ".join(str(d) for d in t.shape)
    OUT.append(f"// {name}: {str(t.dtype)[6:]} ({shape})")
    OUT.append(f"static const int64_t ref_{name}[] = {{{', '.join(lit(v) for v in vals) or '0'}}};")


# x (2, 3) i64 with values a double cannot hold
x = torch.tensor([[BIG + 1, -(2**62) + 3, 7], [2**63 - 1, -(2**63), BIG + 3]])
xi = torch.tensor([[5, -2, 2**31 - 1], [0, 9, -(2**31)]], dtype=i32)
xb = torch.tensor([[True, False, True], [False, False, True]])
idx = torch.tensor([[1, 0, 1], [0, 1, 0]])

show("gather_i64", torch.gather(x, 0, idx))
show("gather_i32_dim1", torch.gather(xi, 1, torch.tensor([[2, 2], [1, 0]])))
show("gather_bool", torch.gather(xb, 0, idx))
# scatter with duplicate targets: the last write (row-major) wins
j = torch.tensor([[1, 1, 0], [1, 1, 0]])
show("scatter_i64", torch.scatter(x, 1, j, x.flip(0)))
show("scatter_bool", torch.scatter(xb, 0, idx, ~xb))
# scatter_add: exact beyond 2^53, wrapping on overflow, bool is or
one = torch.ones(2, 3, dtype=i64)
show("scatter_add_i64", torch.scatter_add(x, 0, idx, one))
show("scatter_add_i32_wrap", torch.scatter_add(xi, 1, torch.tensor([[2, 2, 2], [2, 1, 2]]),
                                               torch.ones(2, 3, dtype=i32)))
show("scatter_add_bool", torch.scatter_add(xb, 0, idx, xb))
show("index_select_i64", torch.index_select(x, 1, torch.tensor([2, 0, 2])))
show("index_select_i32_t", torch.index_select(xi.t(), 0, torch.tensor([1, 1])))
show("index_select_bool", torch.index_select(xb, 0, torch.tensor([1])))
src = torch.tensor([[1, 2], [3, 4]])
show("index_add_i64_alpha3", torch.index_add(x, 1, torch.tensor([2, 2]), src, alpha=3))
show("index_add_i32_alpha2_5", torch.index_add(xi, 1, torch.tensor([0, 1]), src.int(),
                                               alpha=2.5))
tt = torch.ones(2, 2, dtype=b)
show("index_add_bool_alpha0", torch.index_add(xb, 1, torch.tensor([1, 1]), tt, alpha=0))
show("index_add_bool", torch.index_add(xb, 1, torch.tensor([1, 1]), tt))
show("masked_select_i64", torch.masked_select(x, xb))
show("masked_select_bool", torch.masked_select(xb, torch.tensor([True, False, True])))
show("where_i64", torch.where(xb, x, x.flip(1)))
show("where_i32_i64", torch.where(xb, xi, x))
show("where_bool_i32_0d", torch.where(xb, xb, torch.tensor(5, dtype=i32)))
show("where_i32_i64_0d", torch.where(xb, xi, torch.tensor(7)))
show("masked_fill_i64", x.masked_fill(xb, -3))
show("tril_i32", torch.tril(xi))
show("triu_bool", torch.triu(torch.ones(3, 3, dtype=b), 1))
show("flip_i64", torch.flip(x, [0, 1]))
show("roll_i64", torch.roll(x, 1, 1))
show("pad_i64", torch.nn.functional.pad(x, (1, 0), value=-1))
show("cat_i64", torch.cat([x, x[:1]], 0))

# all / any
f = torch.tensor([[1.0, float("nan"), 0.0], [2.0, -1.0, 3.0]])
show("all_f32_dim1", torch.all(f, 1))
show("any_f32_dim1_keep", torch.any(f, 1, keepdim=True))
show("all_nan", torch.all(torch.tensor([float("nan")])))
show("all_i64_big", torch.all(torch.tensor([2**62, -1, BIG + 1])))
show("any_i64_dim0", torch.any(torch.tensor([[0, 0, 2**40], [0, 0, 0]]), 0))
show("all_bool_all", torch.all(xb))
show("any_bool_all", torch.any(xb))
show("all_empty", torch.all(torch.zeros(0, dtype=i32)))
show("any_empty", torch.any(torch.zeros(0)))
show("all_empty_dim", torch.all(torch.zeros(2, 0), 1))
show("any_empty_dim", torch.any(torch.zeros(2, 0, dtype=b), 1))

# integer reductions
p = torch.tensor([[3, -4, 5], [2**20, 2**20, 2**20]], dtype=i32)
show("prod_i32_dim1", torch.prod(p, 1))
show("prod_i64_wrap", torch.prod(torch.tensor([2**62, 4, 3])))
show("prod_bool", torch.prod(xb, 0))
show("prod_i32_empty", torch.prod(torch.zeros(2, 0, dtype=i32), 1))
y = torch.tensor([[BIG, BIG + 1, BIG + 1], [-(2**63), 5, -(2**63)]])  # ties and near-ties
show("amax_i64", torch.amax(y, 1))
show("amin_i64", torch.amin(y, 1))
show("argmax_i64", torch.argmax(y, 1))
show("argmin_i64", torch.argmin(y, 1))
v, i = torch.max(y, 1, keepdim=True)
show("max_dim_i64_values", v)
show("max_dim_i64_indices", i)
v, i = torch.min(xi, 0)
show("min_dim_i32_values", v)
show("min_dim_i32_indices", i)
v, i = torch.max(xb, 1)
show("max_dim_bool_values", v)
show("max_dim_bool_indices", i)
v, i = torch.min(xb, 1)
show("min_dim_bool_values", v)
show("min_dim_bool_indices", i)
show("amax_bool", torch.amax(xb, 0))
show("amin_bool_all", torch.amin(xb))
show("amax_i32_all", torch.amax(xi))
# non-contiguous views: (2, 3, 4) seen as (4, 3, 2)
x3 = ((torch.arange(24) * 7) % 11 - 5).reshape(2, 3, 4).to(i32)
x3t = x3.transpose(0, 2)
show("amax_i32_t_dims02", torch.amax(x3t, (0, 2)))
show("argmin_i32_t_dim0", torch.argmin(x3t, 0))
show("all_i32_t_dims02", torch.all(torch.all(x3t, 2), 0))  # 1.13's all takes one dim
show("any_i32_t_dim1_keep", torch.any(x3t > 3, 1, keepdim=True))

# what PyTorch rejects
for name, fn in [("argmax_bool", lambda: torch.argmax(xb, 1)),
                 ("argmin_bool", lambda: torch.argmin(xb, 1)),
                 ("scatter_add_mixed", lambda: torch.scatter_add(xi, 0, idx, one)),
                 ("amax_empty", lambda: torch.amax(torch.zeros(2, 0, dtype=i64), 1))]:
    try:
        fn()
        print(name, "accepted")
    except (RuntimeError, IndexError) as e:
        print(name, "rejects:", str(e).splitlines()[0])

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dtypes_values.h")
with open(path, "w") as f:
    f.write(f"// Generated by tests/reference/dtypes_values.py (torch {torch.__version__}); "
            "do not edit.\n// Each array: the values row-major, exact (the dtype and shape "
            "in the comment).\n#include <stdint.h>\n\n")
    f.write("\n".join(OUT) + "\n")
