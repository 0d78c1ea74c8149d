# The ViT of examples/vit.c in PyTorch. Usage: vit.py [epochs] [train_limit] [threads]
import gzip, sys, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, DEPTH, MLP, PATCH, NTOK = 64, 4, 3, 128, 7, 17


def load(train, limit):
    p = "/usr/share/datasets/fashion-mnist/" + ("train" if train else "t10k")
    x = np.frombuffer(gzip.open(p + "-images-idx3-ubyte.gz").read(), np.uint8, offset=16)
    y = np.frombuffer(gzip.open(p + "-labels-idx1-ubyte.gz").read(), np.uint8, offset=8)
    x = torch.tensor(x.reshape(-1, 1, 28, 28), dtype=torch.float32) / 255
    y = torch.tensor(y, dtype=torch.int64)
    n = limit if 0 < limit < len(y) else len(y)
    return ((x - 0.2860) / 0.3530)[:n], y[:n]


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(1, D, PATCH, stride=PATCH)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D))
        self.pos = nn.Parameter(torch.randn(NTOK, D) * 0.02)
        layer = nn.TransformerEncoderLayer(D, HEADS, MLP, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, DEPTH)
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, 10)

    def forward(self, x):
        p = self.patch(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), p], 1) + self.pos
        return self.head(self.norm(self.blocks(h))[:, 0])


def main():
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if len(sys.argv) > 3:
        torch.set_num_threads(int(sys.argv[3]))
    torch.manual_seed(1)
    model = ViT()
    print(f"vit: {sum(p.numel() for p in model.parameters())} parameters, "
          f"{torch.get_num_threads()} threads")
    xtr, ytr = load(True, limit)
    xte, yte = load(False, 0)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr),
                                         batch_size=128, shuffle=True)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                             {"params": rest, "weight_decay": 0.0}], lr=1e-3)
    for ep in range(1, epochs + 1):
        t0, loss_sum = time.time(), 0.0
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(yb)
        t1 = time.time()
        model.eval()
        with torch.no_grad():
            acc = sum((model(xte[s:s + 1000]).argmax(-1) == yte[s:s + 1000]).sum().item()
                      for s in range(0, len(yte), 1000)) / len(yte)
        model.train()
        print(f"epoch {ep} train_loss={loss_sum / len(ytr):.4f} test_acc={acc:.4f} "
              f"s_per_epoch={t1 - t0:.2f}", flush=True)


main()
