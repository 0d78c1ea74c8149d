# Prints PyTorch 1.13's values that tests/test_ops_compare.c pins: comparisons with broadcasting,
# NaN and f32 scalar rounding, logical ops, where (values and gradients, broadcast), masked_select
# (values and gradient, broadcast mask), nonzero, and the argmax/eq accuracy.
# Run: python3 tests/reference/compare_values.py (needs torch; make test never runs it).
import torch

nan = float('nan')


def fmt(t):
    t = t.flatten().tolist()
    return ', '.join('NAN' if v != v else str(int(v)) if isinstance(v, bool) else repr(v)
                     for v in t)


def show(name, t):
    print(f'{name}: shape={tuple(t.shape)} dtype={t.dtype}: {fmt(t)}')


a = torch.tensor([[1., 2., nan], [4., 2., 0.]], dtype=torch.float64)
b = torch.tensor([2., 2., nan], dtype=torch.float64)
for f in (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge):
    show(f'{f.__name__}(a, b)', f(a, b))
for f in (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge):
    show(f'{f.__name__}(a, 2)', f(a, 2.0))
x32 = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float32)
show('f32 == 0.1', x32 == 0.1)
show('f32 == f64(0.1)', x32 == torch.tensor(0.1, dtype=torch.float64))
i = torch.tensor([1, 2, 3])
show('i64 < 2.5', i < 2.5)
show('i64 == f32', i == torch.tensor([1., 2.5, 3.]))

p = torch.tensor([[0., 1., -2.], [nan, 0., 3.]])
q = torch.tensor([1., 0., 0.])
show('logical_and', torch.logical_and(p, q))
show('logical_or', torch.logical_or(p, q))
show('logical_xor', torch.logical_xor(p, q))
show('logical_not', torch.logical_not(p))

cond = torch.tensor([[True], [False]])            # (2, 1)
wa = torch.tensor([1., 2., 3.], dtype=torch.float64, requires_grad=True)   # (3,)
wb = torch.tensor([[10., 20., 30.], [40., 50., 60.]], dtype=torch.float64,
                  requires_grad=True)               # (2, 3)
y = torch.where(cond, wa, wb)
g = torch.tensor([[1., 2., 3.], [4., 5., 6.]], dtype=torch.float64)
y.backward(g)
show('where y', y)
show('where da', wa.grad)
show('where db', wb.grad)

mx = torch.tensor([[1., 2., 3.], [4., 5., 6.]], dtype=torch.float64, requires_grad=True)
mm = torch.tensor([True, False, True])            # broadcast over rows
ms = torch.masked_select(mx, mm)
ms.backward(torch.tensor([1., 2., 3., 4.], dtype=torch.float64))
show('masked_select', ms)
show('masked_select dx', mx.grad)
# x broadcast against the mask: x (3,), mask (2, 3): x's gradient sums over the rows.
bx = torch.tensor([1., 2., 3.], dtype=torch.float64, requires_grad=True)
bm = torch.tensor([[True, True, False], [False, True, True]])
bs = torch.masked_select(bx, bm)
bs.backward(torch.tensor([1., 10., 100., 1000.], dtype=torch.float64))
show('masked_select bx', bs)
show('masked_select bx dx', bx.grad)

show('nonzero', torch.nonzero(torch.tensor([[0., 1.5, 0.], [2., 0., nan]])))
show('nonzero 1d', torch.nonzero(torch.tensor([0, 3, 0, 4])))

logits = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 1.0], [0.0, 0.5, 0.4], [1.0, 1.0, 2.0]])
targets = torch.tensor([1, 2, 1, 2])
show('accuracy', (logits.argmax(-1) == targets).float().mean())
print(torch.tensor([True, False]))
