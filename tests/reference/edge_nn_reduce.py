# Prints PyTorch 1.13's values for the NaN / edge cases that tests/test_ops_nn.c and
# tests/test_ops_reduce.c pin (softmax and log_softmax of rows with a NaN, cross-entropy with a
# NaN logit and at logits near 1e4, amax with a NaN, var with N - correction <= 0).
# Run: python3 tests/reference/edge_nn_reduce.py (needs torch; make test never runs it).
import torch

nan, inf = float('nan'), float('inf')


def fmt(t):
    return ', '.join('NAN' if v != v else ('INFINITY' if v == inf else
                     ('-INFINITY' if v == -inf else repr(v))) for v in t.flatten().tolist())


def show(name, t):
    print(f'{name}: {fmt(t)}')


for dt in (torch.float64, torch.float32):
    print(f'==== {dt} ====')
    # softmax / log_softmax along the last dim: rows with a NaN, then an ordinary row.
    rows = [[1., nan, 2.], [nan, nan, nan], [nan, -inf, -inf], [1., 2., 3.]]
    g = torch.tensor([[0.5, -1., 2.]] * 4, dtype=dt)
    for f in (torch.softmax, torch.log_softmax):
        x = torch.tensor(rows, dtype=dt, requires_grad=True)
        y = f(x, 1)
        y.backward(g)
        show(f'{f.__name__} rows y', y)
        show(f'{f.__name__} rows dx', x.grad)
    # along dim 0 of (3, 2): column 0 all NaN, column 1 ordinary.
    for f in (torch.softmax, torch.log_softmax):
        x = torch.tensor([[nan, 1.], [nan, 2.], [nan, 0.]], dtype=dt, requires_grad=True)
        y = f(x, 0)
        y.backward(torch.tensor([[1., 1.], [-2., 0.5], [0.25, -1.]], dtype=dt))
        show(f'{f.__name__} dim0 y', y)
        show(f'{f.__name__} dim0 dx', x.grad)

    # cross-entropy: a NaN logit in row 0, an ordinary row 1.
    x = torch.tensor([[1., nan, 2.], [1., 2., 3.]], dtype=dt, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(x, torch.tensor([0, 2]))
    loss.backward()
    show('ce nan loss', loss)
    show('ce nan dx', x.grad)

# cross-entropy at logits near 1e4, in f32 and f64 (the f32 logits are exactly representable).
logits = [[10000., 10000.5, 9999.25, 10001.], [-12000.75, -12001., -11999.5, -12003.]]
for dt in (torch.float64, torch.float32):
    x = torch.tensor(logits, dtype=dt, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(x, torch.tensor([1, 3]))
    loss.backward()
    show(f'ce big {dt} loss', loss)
    show(f'ce big {dt} dx', x.grad)

# amax (tt_max) with a NaN, over dim 1 and over all dims; ties still split evenly.
print('==== amax (f64) ====')
for rows in ([[1., nan, 3., nan], [0., 1., 2., 3.]], [[3., 1., 3., 2.], [0., 1., 2., 3.]]):
    x = torch.tensor(rows, dtype=torch.float64, requires_grad=True)
    y = torch.amax(x, 1)
    y.backward(torch.tensor([2., 1.], dtype=torch.float64))
    show(f'amax dim1 {rows[0]} y', y)
    show(f'amax dim1 {rows[0]} dx', x.grad)
    x.grad = None
    y = torch.amax(x)
    y.backward(torch.tensor(2., dtype=torch.float64))
    show(f'amax all {rows[0]} y', y)
    show(f'amax all {rows[0]} dx', x.grad)

# var with N - correction <= 0: x (1, N), all dims (dim=None) and dim=1; g = -1.5.
# PyTorch 1.13 raises in the backward of the all-dims case when N == correction ("invalid
# gradient ... got []"); tinytorch gives g * (x == mean ? NaN : inf) there, as later releases.
print('==== var (f64) ====')
for row in ([3.], [1., 4.], [2., 2.]):
    for corr in (0, 1, 2, 3):
        for dims in (None, 1):
            x = torch.tensor([row], dtype=torch.float64, requires_grad=True)
            y = torch.var(x, dim=dims, correction=corr)
            show(f'var {row} correction={corr} dim={dims} y', y)
            try:
                y.backward(torch.full_like(y, -1.5))
                show(f'var {row} correction={corr} dim={dims} dx', x.grad)
            except RuntimeError as e:
                print(f'var {row} correction={corr} dim={dims} dx: raises ({str(e)[:50]})')
