# Prints the reference numbers of tests/test_nn.c's "modules" case (PyTorch 1.13, f64):
# Sequential(Linear(3, 4), LayerNorm(4, elementwise_affine=False), ReLU,
#            Sequential(Identity, Linear(4, 2)), Flatten(0, -1))
# on a (2, 3) input, then backward of sum(y * [1, 2, 3, 4]).
# Run: /usr/bin/python3 tests/reference/modules_values.py  (make test never needs it)
import torch

torch.set_default_dtype(torch.float64)
l0 = torch.nn.Linear(3, 4)
l1 = torch.nn.Linear(4, 2)
with torch.no_grad():
    l0.weight.copy_(torch.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6],
                                  [-0.7, 0.8, 0.9], [1.0, -1.1, 1.2]]))
    l0.bias.copy_(torch.tensor([0.1, -0.1, 0.2, -0.2]))
    l1.weight.copy_(torch.tensor([[0.5, -0.4, 0.3, -0.2], [0.1, 0.2, -0.3, 0.4]]))
    l1.bias.copy_(torch.tensor([0.05, -0.05]))
model = torch.nn.Sequential(l0, torch.nn.LayerNorm(4, elementwise_affine=False),
                            torch.nn.ReLU(),
                            torch.nn.Sequential(torch.nn.Identity(), l1),
                            torch.nn.Flatten(0, -1))
print([n for n, _ in model.named_parameters()])
x = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], requires_grad=True)
y = model(x)
(y * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
fmt = lambda t: ", ".join("%.17g" % v for v in t.detach().flatten().tolist())
print("y", tuple(y.shape), fmt(y))
print("dx", fmt(x.grad))
print("d0.weight", fmt(l0.weight.grad))
print("d3.1.weight", fmt(l1.weight.grad))
print("d3.1.bias", fmt(l1.bias.grad))
