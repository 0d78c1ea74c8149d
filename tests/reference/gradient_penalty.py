#!/usr/bin/env python3
# The PyTorch twin of examples/gradient_penalty.c: a WGAN-GP on 2-D points, with Swish as a
# torch.autograd.Function, the critic's gradient by torch.autograd.grad(create_graph=True).
# Usage: /usr/bin/python3 tests/reference/gradient_penalty.py [iterations]
import sys

import torch
from torch import nn


class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return g * s * (1 + x * (1 - s))


class MLP(nn.Module):
    def __init__(self, hidden, out):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(2, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, out)

    def forward(self, x):
        return self.fc3(Swish.apply(self.fc2(Swish.apply(self.fc1(x)))))


def real_batch(n):
    return torch.randn(n, 2) * torch.tensor([0.5, 0.3]) + torch.tensor([2.0, -1.0])


def gradient_penalty(critic, real, fake):
    eps = torch.rand(real.size(0), 1)
    x_hat = (eps * real + (1 - eps) * fake).requires_grad_()
    (grad,) = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
    return 10 * ((grad.norm(2, dim=1) - 1) ** 2).mean()


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    batch, n_critic = 256, 5
    torch.manual_seed(7)
    gen, critic = MLP(32, 2), MLP(64, 1)
    opt_g = torch.optim.Adam(gen.parameters(), lr=5e-4, betas=(0.5, 0.9))
    opt_d = torch.optim.Adam(critic.parameters(), lr=5e-4, betas=(0.5, 0.9))
    for it in range(iters):
        for _ in range(n_critic):
            real = real_batch(batch)
            with torch.no_grad():
                fake = gen(torch.randn(batch, 2))
            dist = critic(real).mean() - critic(fake).mean()
            loss = -dist + gradient_penalty(critic, real, fake)
            opt_d.zero_grad()
            loss.backward()
            opt_d.step()
        fake = gen(torch.randn(batch, 2))
        opt_g.zero_grad()
        (-critic(fake).mean()).backward()
        opt_g.step()
        if it % 50 == 0 or it == iters - 1:
            print("iter %4d  wasserstein %.4f" % (it, dist.item()))
    with torch.no_grad():
        s = gen(torch.randn(4096, 2))
        mean, std = s.mean(0), s.std(0)
    print("done mean=(%.3f, %.3f) std=(%.3f, %.3f)" % (mean[0], mean[1], std[0], std[1]))


if __name__ == "__main__":
    main()
