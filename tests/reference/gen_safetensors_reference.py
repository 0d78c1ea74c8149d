#!/usr/bin/env python3
# Writes the safetensors reference files of tests/test_safetensors.c. (1) The same tensors saved
# with their float tensors as F32, F64, F16 and BF16, laid out byte for byte as the reference
# writer does (tensors by dtype, widest first, then by name; "__metadata__" first with sorted
# keys; compact JSON padded with spaces to a multiple of 8), built by hand with struct + json.
# PyTorch gives the F16/BF16 bits (its round-to-nearest-even .half() and .bfloat16()) and
# the values they widen back to; those go into safetensors_reference.h.
# (2) Two tiny random GPT-2s in the Hugging Face layout (Conv1D (in, out) weights, the fused
# attn.c_attn, the attn.bias / attn.masked_bias buffers): gpt2_tiny_tied.safetensors with the
# "transformer." prefix and no lm_head (tied), gpt2_tiny_untied.safetensors without the prefix,
# with its own lm_head and metadata n_head; and gpt2_tiny_expected.safetensors with the tokens
# and the logits of GPT-2's forward (tanh GELU, biases, layernorm eps 1e-5) written out here by
# hand in float64. (3) gpt2_tiny_greedy.txt: the greedy continuation of a prompt by the untied
# tiny GPT-2 (the argmax of that forward, token by token), for tests/run_gpt.sh's `gpt sample
# --temperature 0`; its ids are GPT-2 byte tokens (id i < 94 is the byte 33 + i: '0' is 15).
#
#     /usr/bin/python3 tests/reference/gen_safetensors_reference.py
import json
import math
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

# Edge cases of the conversions, then a few ordinary numbers.
VALUES = [
    0.0, -0.0, 1.0, -1.0, 1.0 / 3.0, 0.1, -2.5, 65504.0, 65519.0, 65520.0, 1e5, -1e5,
    2.0 ** -14, 2.0 ** -14 * (1 - 2 ** -11), 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25,
    2.5 * 2.0 ** -24, 1e-8, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8,
    1 + 3 * 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -20, 3.4028234663852886e38, -3.0e38,
    1.401298464324817e-45, 1.1754943508222875e-38, 1e-40, math.inf, -math.inf, math.nan,
    -math.nan, 123.456, -0.007, 42.0, 1e10, 5e-5,
]

# rank = the reference writer's dtype order; it writes higher ranks first.
RANK = {"BOOL": 0, "F16": 1, "BF16": 2, "I32": 3, "F32": 4, "F64": 5, "I64": 6}
META = {"format": "pt", "note": "quote \" backslash \\ tab\t é"}


def float_bytes(values, fmt):
    t = torch.tensor(values, dtype=torch.float64)
    if fmt == "F64":
        return struct.pack("<%dq" % t.numel(), *t.view(torch.int64).flatten().tolist())
    t = t.to(torch.float32)
    if fmt == "F32":
        return struct.pack("<%di" % t.numel(), *t.view(torch.int32).flatten().tolist())
    h = t.half() if fmt == "F16" else t.bfloat16()
    return struct.pack("<%dh" % t.numel(), *h.view(torch.int16).flatten().tolist())


def tensors(fmt):
    # name -> (dtype, shape, bytes); float tensors in fmt.
    def fl(name, shape, values):
        return name, (fmt, shape, float_bytes(values, fmt))
    return dict([
        fl("values", [len(VALUES)], VALUES),
        fl("matrix", [2, 3], [1.5, -2.25, 3.0, 0.1, 1e-3, -7.0]),
        fl("empty", [0, 3], []),
        fl("scalar", [], [2.5]),
        fl("w\u00e9.\u00fcnicode", [1], [0.5]),
        fl("d8", [1, 1, 1, 1, 1, 1, 2, 1], [-1.0, 4.0]),
        ("ids", ("I32", [4], struct.pack("<4i", 0, -1, 2 ** 31 - 1, -2 ** 31))),
        ("ids64", ("I64", [2, 2], struct.pack("<4q", 2 ** 40, -2 ** 62, 0, 7))),
        ("mask", ("BOOL", [5], bytes([1, 0, 0, 1, 1]))),
    ])


def safetensors_bytes(ts, meta):
    order = sorted(ts, key=lambda n: (-RANK[ts[n][0]], n.encode("utf-8")))
    header, data = {"__metadata__": dict(sorted(meta.items()))}, b""
    for name in order:
        dtype, shape, b = ts[name]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def c_array(ctype, name, values, fmt):
    body = ", ".join(fmt % v for v in values)
    lines, line = [], "   "
    for item in body.split(", "):
        if len(line) + len(item) + 2 > 96:
            lines.append(line.rstrip())
            line = "   "
        line += " " + item + ","
    lines.append(line.rstrip())
    return "static const %s %s[%d] = {\n%s\n};\n" % (ctype, name, len(values), "\n".join(lines))


def main():
    for fmt in ("F32", "F64", "F16", "BF16"):
        path = os.path.join(HERE, "safetensors_%s.safetensors" % fmt.lower())
        with open(path, "wb") as f:
            f.write(safetensors_bytes(tensors(fmt), META))
    v64 = torch.tensor(VALUES, dtype=torch.float64)
    v32 = v64.to(torch.float32)
    h, b = v32.half(), v32.bfloat16()
    u16 = lambda t: [x & 0xFFFF for x in t.view(torch.int16).tolist()]
    u32 = lambda t: [x & 0xFFFFFFFF for x in t.view(torch.int32).tolist()]
    u64 = lambda t: [x & 0xFFFFFFFFFFFFFFFF for x in t.view(torch.int64).tolist()]
    out = ["// Written by gen_safetensors_reference.py (PyTorch %s): the \"values\" tensor of the\n"
           "// safetensors_*.safetensors files as bits: its f64 and f32 inputs, PyTorch's F16 and\n"
           "// BF16 roundings (.half(), .bfloat16()) and the f32 values they widen back to.\n"
           % torch.__version__,
           "#define ST_REF_N %d\n" % len(VALUES),
           c_array("uint64_t", "st_ref_f64_bits", u64(v64), "0x%016xull"),
           c_array("uint32_t", "st_ref_f32_bits", u32(v32), "0x%08xu"),
           c_array("uint16_t", "st_ref_f16_bits", u16(h), "0x%04x"),
           c_array("uint32_t", "st_ref_f16_back", u32(h.float()), "0x%08xu"),
           c_array("uint16_t", "st_ref_bf16_bits", u16(b), "0x%04x"),
           c_array("uint32_t", "st_ref_bf16_back", u32(b.float()), "0x%08xu")]
    with open(os.path.join(HERE, "safetensors_reference.h"), "w") as f:
        f.write("\n".join(out))


# ---- tiny GPT-2s ----

def gpt2_state(V, n_ctx, C, L, buffers):
    g = torch.Generator().manual_seed(1234)
    def w(*shape, std=0.3, mean=0.0):
        return (mean + std * torch.randn(*shape, generator=g, dtype=torch.float64)).float()
    sd = {"wte.weight": w(V, C, std=0.5), "wpe.weight": w(n_ctx, C, std=0.2)}
    for l in range(L):
        p = "h.%d." % l
        sd[p + "ln_1.weight"], sd[p + "ln_1.bias"] = w(C, std=0.1, mean=1), w(C, std=0.1)
        sd[p + "attn.c_attn.weight"], sd[p + "attn.c_attn.bias"] = w(C, 3 * C), w(3 * C, std=0.1)
        sd[p + "attn.c_proj.weight"], sd[p + "attn.c_proj.bias"] = w(C, C), w(C, std=0.1)
        sd[p + "ln_2.weight"], sd[p + "ln_2.bias"] = w(C, std=0.1, mean=1), w(C, std=0.1)
        sd[p + "mlp.c_fc.weight"], sd[p + "mlp.c_fc.bias"] = w(C, 4 * C), w(4 * C, std=0.1)
        sd[p + "mlp.c_proj.weight"], sd[p + "mlp.c_proj.bias"] = w(4 * C, C), w(C, std=0.1)
        if buffers:  # as GPT2Attention registers them (float, as in the published files)
            sd[p + "attn.bias"] = torch.tril(torch.ones(n_ctx, n_ctx)).view(1, 1, n_ctx, n_ctx)
            sd[p + "attn.masked_bias"] = torch.tensor(-1e4)
    sd["ln_f.weight"], sd["ln_f.bias"] = w(C, std=0.1, mean=1), w(C, std=0.1)
    return sd


def gpt2_forward(sd, tokens, n_head, lm_head=None):
    """GPT-2's forward in float64: tokens (B, T) -> logits (B, T, V)."""
    d = {k: v.double() for k, v in sd.items()}
    B, T = tokens.shape
    C = d["wte.weight"].shape[1]
    hs = C // n_head
    L = sum(1 for k in d if k.endswith(".ln_1.weight"))

    def ln(x, p):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + 1e-5) * d[p + ".weight"] + d[p + ".bias"]

    def gelu_tanh(x):
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

    def conv1d(x, p):  # x (.., in) @ W (in, out) + b
        return x @ d[p + ".weight"] + d[p + ".bias"]

    x = d["wte.weight"][tokens] + d["wpe.weight"][:T]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    for l in range(L):
        p = "h.%d." % l
        q, k, v = conv1d(ln(x, p + "ln_1"), p + "attn.c_attn").split(C, dim=-1)
        q, k, v = (t.view(B, T, n_head, hs).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = torch.softmax(att.masked_fill(mask, -math.inf), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + conv1d(y, p + "attn.c_proj")
        h = gelu_tanh(conv1d(ln(x, p + "ln_2"), p + "mlp.c_fc"))
        x = x + conv1d(h, p + "mlp.c_proj")
    x = ln(x, "ln_f")
    return x @ (d["wte.weight"] if lm_head is None else lm_head.double()).T


def st_of(t):
    name = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}[t.dtype]
    t = t.contiguous()
    if t.dim() == 0:
        t = t.view(1)
        shape = []
    else:
        shape = list(t.shape)
    fmt = {"F32": "<%di", "F64": "<%dq", "I64": "<%dq"}[name]
    view = {"F32": torch.int32, "F64": torch.int64, "I64": torch.int64}[name]
    return name, shape, struct.pack(fmt % t.numel(), *t.view(view).flatten().tolist())


def write_gpt2s():
    V, n_ctx, C, L, H = 23, 8, 16, 2, 2
    tied = gpt2_state(V, n_ctx, C, L, buffers=True)
    untied = gpt2_state(V, n_ctx, C, L, buffers=False)
    lm_head = (0.5 * torch.randn(V, C, generator=torch.Generator().manual_seed(99),
                                 dtype=torch.float64)).float()
    tokens = torch.tensor([[0, 5, 22, 7, 7, 1, 13, 2], [3, 3, 9, 0, 21, 11, 4, 8]])
    expected = {
        "tokens": tokens,
        "logits_tied": gpt2_forward(tied, tokens, H),
        "logits_untied": gpt2_forward(untied, tokens, H, lm_head),
    }
    files = {
        "gpt2_tiny_tied": ({"transformer." + k: v for k, v in tied.items()}, {"format": "pt"}),
        "gpt2_tiny_untied": (dict(untied, **{"lm_head.weight": lm_head}),
                             {"format": "pt", "n_head": str(H)}),
        "gpt2_tiny_expected": (expected, {"format": "pt"}),
    }
    for name, (sd, meta) in files.items():
        with open(os.path.join(HERE, name + ".safetensors"), "wb") as f:
            f.write(safetensors_bytes({k: st_of(v) for k, v in sd.items()}, meta))
    write_greedy(untied, lm_head, H, n_ctx)


def write_greedy(sd, lm_head, n_head, n_ctx):
    # The prompt "0*0" (GPT-2 ids 15 9 15), then argmax tokens until the context is full; the
    # smallest gap between the best and second logit shows float32 cannot flip a choice.
    ids, gaps = [15, 9, 15], []
    while len(ids) < n_ctx:
        logits = gpt2_forward(sd, torch.tensor([ids]), n_head, lm_head)[0, -1]
        top = torch.topk(logits, 2).values
        gaps.append(float(top[0] - top[1]))
        ids.append(int(torch.argmax(logits)))
    text = "".join(chr(33 + i) for i in ids)
    with open(os.path.join(HERE, "gpt2_tiny_greedy.txt"), "w") as f:
        f.write("# gen_safetensors_reference.py: greedy continuation of "
                "gpt2_tiny_untied.safetensors"
                "\n# (GPT-2 ids; smallest top-2 logit gap %.4f)\n" % min(gaps))
        f.write("prompt_ids %s\n" % " ".join(map(str, ids[:3])))
        f.write("ids %s\n" % " ".join(map(str, ids)))
        f.write("text %s\n" % text)


if __name__ == "__main__":
    main()
    write_gpt2s()
