# The VAE of examples/vae.c in PyTorch. Usage: vae.py [epochs] [threads]
import gzip, sys, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def load(train):
    p = "/usr/share/datasets/fashion-mnist/" + ("train" if train else "t10k")
    x = np.frombuffer(gzip.open(p + "-images-idx3-ubyte.gz").read(), np.uint8, offset=16)
    return torch.tensor(x.reshape(-1, 784), dtype=torch.float32) / 255


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc, self.mu, self.logvar = nn.Linear(784, 400), nn.Linear(400, 20), nn.Linear(400, 20)
        self.dec1, self.dec2 = nn.Linear(20, 400), nn.Linear(400, 784)

    def decode(self, z):
        return self.dec2(F.relu(self.dec1(z)))

    def loss(self, x, sample=True):
        h = F.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu) if sample else mu
        rec = F.binary_cross_entropy_with_logits(self.decode(z), x, reduction="sum")
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return (rec + kl) / x.shape[0]


def test_loss(m, x):
    with torch.no_grad():
        return sum(m.loss(x[s:s + 1000], False).item() * 1000 for s in range(0, len(x), 1000)) / len(x)


epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
if len(sys.argv) > 2:
    torch.set_num_threads(int(sys.argv[2]))
torch.manual_seed(1)
m = VAE()
xtr, xte = load(True), load(False)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr), batch_size=128, shuffle=True)
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
for ep in range(1, epochs + 1):
    t0, total = time.time(), 0.0
    for (xb,) in loader:
        loss = m.loss(xb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.item() * len(xb)
    print(f"epoch {ep} train_loss={total / len(xtr):.2f} test_loss={test_loss(m, xte):.2f} "
          f"s_per_epoch={time.time() - t0:.2f}", flush=True)
torch.save(m.state_dict(), "vae_py.pt")
m2 = VAE()
m2.load_state_dict(torch.load("vae_py.pt"))
print(f"trained test_loss={test_loss(m, xte):.4f} loaded test_loss={test_loss(m2, xte):.4f}")
with torch.no_grad():
    img = torch.sigmoid(m2.decode(torch.randn(64, 20)))
