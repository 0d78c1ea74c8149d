#!/usr/bin/env python3
# Writes the Llama reference files of tests/test_llama.c: a tiny random Llama in Hugging Face's
# LlamaForCausalLM layout (llama_tiny.safetensors: model.embed_tokens, model.layers.<l>.
# {input_layernorm, self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj},
# model.norm, an untied lm_head, the old self_attn.rotary_emb.inv_freq buffers, and config.json's
# hyperparameters in the metadata), and llama_tiny_expected.safetensors with a batch of tokens
# and the logits of the Llama forward written out below by hand in float64 (no `transformers`):
# embeddings, RMSNorm with a gain, rotate-half RoPE (pairs i and i + HS/2, as Hugging Face's
# rotate_half), grouped-query attention (each key/value head serves n_head / n_kv_head
# consecutive query heads, as repeat_kv), SwiGLU (down(silu(gate(x)) * up(x))), the final norm
# and the head. The sizes are chosen so that a swapped piece shows: GQA, an MLP width that is not
# 4 C, a RoPE base and an RMSNorm epsilon that are not our defaults.
#
#     /usr/bin/python3 tests/reference/gen_llama_reference.py
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_safetensors_reference import safetensors_bytes, st_of  # noqa: E402

CONFIG = {  # config.json's names
    "vocab_size": 37, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 16,
    "rope_theta": 500.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
}


def llama_state(cfg):
    g = torch.Generator().manual_seed(27)
    V, C, H = cfg["vocab_size"], cfg["hidden_size"], cfg["intermediate_size"]
    hs = C // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * hs

    def w(*shape, std=None, mean=0.0):  # matrices N(0, 1 / fan_in): activations stay O(1)
        std = std if std is not None else 1 / math.sqrt(shape[-1])
        return (mean + std * torch.randn(*shape, generator=g, dtype=torch.float64)).float()

    sd = {"model.embed_tokens.weight": w(V, C, std=1.0)}
    inv_freq = 1.0 / cfg["rope_theta"] ** (torch.arange(0, hs, 2, dtype=torch.float32) / hs)
    for layer in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % layer
        sd[p + "input_layernorm.weight"] = w(C, std=0.1, mean=1)
        sd[p + "self_attn.q_proj.weight"] = w(C, C)
        sd[p + "self_attn.k_proj.weight"] = w(kv, C)
        sd[p + "self_attn.v_proj.weight"] = w(kv, C)
        sd[p + "self_attn.o_proj.weight"] = w(C, C)
        sd[p + "self_attn.rotary_emb.inv_freq"] = inv_freq  # a buffer older files hold
        sd[p + "post_attention_layernorm.weight"] = w(C, std=0.1, mean=1)
        sd[p + "mlp.gate_proj.weight"] = w(H, C)
        sd[p + "mlp.up_proj.weight"] = w(H, C)
        sd[p + "mlp.down_proj.weight"] = w(C, H)
    sd["model.norm.weight"] = w(C, std=0.1, mean=1)
    sd["lm_head.weight"] = w(V, C)
    return sd


def rmsnorm(x, weight, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_tables(T, hs, theta):
    inv_freq = 1.0 / theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs)
    angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # (T, HS/2)
    emb = torch.cat((angles, angles), dim=-1)  # (T, HS): each angle in both halves
    return emb.cos(), emb.sin()


def attention(d, p, x, cfg):
    B, T, C = x.shape
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hs = C // nh

    def heads(name, n):
        return (x @ d[p + name].T).view(B, T, n, hs).transpose(1, 2)  # (B, n, T, HS)

    q, k, v = heads("self_attn.q_proj.weight", nh), heads("self_attn.k_proj.weight", nkv), \
        heads("self_attn.v_proj.weight", nkv)
    cos, sin = rope_tables(T, hs, cfg["rope_theta"])
    q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    k, v = k.repeat_interleave(nh // nkv, dim=1), v.repeat_interleave(nh // nkv, dim=1)
    att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
    att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), -math.inf)
    y = (torch.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
    return y @ d[p + "self_attn.o_proj.weight"].T


def swiglu_mlp(d, p, x):
    gate, up = x @ d[p + "mlp.gate_proj.weight"].T, x @ d[p + "mlp.up_proj.weight"].T
    return (torch.nn.functional.silu(gate) * up) @ d[p + "mlp.down_proj.weight"].T


def llama_forward(sd, tokens, cfg):
    """LlamaForCausalLM's forward in float64: tokens (B, T) -> logits (B, T, V)."""
    d = {k: v.double() for k, v in sd.items()}
    eps = cfg["rms_norm_eps"]
    x = d["model.embed_tokens.weight"][tokens]
    for layer in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % layer
        x = x + attention(d, p, rmsnorm(x, d[p + "input_layernorm.weight"], eps), cfg)
        x = x + swiglu_mlp(d, p, rmsnorm(x, d[p + "post_attention_layernorm.weight"], eps))
    return rmsnorm(x, d["model.norm.weight"], eps) @ d["lm_head.weight"].T


def main():
    sd = llama_state(CONFIG)
    g = torch.Generator().manual_seed(7)
    tokens = torch.randint(0, CONFIG["vocab_size"], (2, CONFIG["max_position_embeddings"]),
                           generator=g)
    logits = llama_forward(sd, tokens, CONFIG)
    meta = {"format": "pt"}
    meta.update({k: (str(v).lower() if isinstance(v, bool) else str(v))
                 for k, v in CONFIG.items()})
    files = {
        "llama_tiny": (sd, meta),
        "llama_tiny_expected": ({"tokens": tokens, "logits": logits}, {"format": "pt"}),
    }
    for name, (tensors, m) in files.items():
        path = os.path.join(HERE, name + ".safetensors")
        with open(path, "wb") as f:
            f.write(safetensors_bytes({k: st_of(v) for k, v in tensors.items()}, m))
        print(path, len(tensors), "tensors")
    print("logits: mean |x| %.4f, max |x| %.4f" % (logits.abs().mean(), logits.abs().max()))


if __name__ == "__main__":
    main()
