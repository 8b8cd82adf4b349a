#!/usr/bin/python3
"""Independent reference for egca's decoder layer math (tests/trainer/layer_reference_test.cpp).

Written from the published formulas, not from egca's C++:
  RMSNorm      y = w * x / sqrt(mean(x^2) + eps)                     (Zhang & Sennrich 2019)
  RoPE         inv_freq_i = theta^(-2i/d), angle = pos * inv_freq, rotate_half pairing
               (x_i, x_{i+d/2}) as in GPT-NeoX / Hugging Face Llama  (Su et al. 2021)
  GQA          query head h reads kv head h // (H / H_kv)            (Ainslie et al. 2023)
  attention    softmax(q k^T / sqrt(d) + causal mask) v
  SwiGLU MLP   down(silu(gate(x)) * up(x))                           (Shazeer 2020)
  Qwen2        q/k/v projections carry biases
  Qwen3        per-head RMSNorm on q and k before RoPE
  tied         logits = h @ embed^T
Everything runs in float64 with explicit per-head loops; every sequence of a batch is
evaluated on its own, without padding, so the C++ side (which runs a left-padded batch)
is checked against the unpadded semantics.

Weights and inputs come from a formula, so nothing binary is checked in:
  value[i] = offset + scale * sin(0.37 * i + phase)      (i = flat row-major index)

Usage: /usr/bin/python3 tests/trainer/reference/layer_reference.py > \
           tests/trainer/reference/layer_reference_baseline.json
"""
import json
import math
import sys

import torch

torch.set_default_dtype(torch.float64)


def formula(shape, phase, scale, offset=0.0):
    n = 1
    for d in shape:
        n *= d
    i = torch.arange(n, dtype=torch.float64)
    return (offset + scale * torch.sin(0.37 * i + phase)).reshape(shape)


def rms_norm(x, w, eps):
    return w * x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps)


def rope(x, positions, theta):
    """x: [T, d] for one head; positions: list of ints."""
    d = x.shape[-1]
    half = d // 2
    out = torch.empty_like(x)
    for t, pos in enumerate(positions):
        for i in range(half):
            angle = pos * theta ** (-2.0 * i / d)
            c, s = math.cos(angle), math.sin(angle)
            a, b = x[t, i].item(), x[t, i + half].item()
            out[t, i] = a * c - b * s
            out[t, i + half] = b * c + a * s
    return out


def param_specs(cfg):
    """(name, shape, phase, scale, offset) for every parameter, in a fixed order."""
    H, Hkv, d, D, I, V = (cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"],
                          cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"])
    qkv_bias = cfg["model_type"] == "qwen2" or cfg.get("attention_bias", False)
    specs = [("model.embed_tokens.weight", [V, D], 0.0, 0.5, 0.0)]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        specs += [
            (p + "input_layernorm.weight", [D], 0.1, 0.2, 1.0),
            (p + "self_attn.q_proj.weight", [H * d, D], 0.2, 0.3, 0.0),
            (p + "self_attn.k_proj.weight", [Hkv * d, D], 0.3, 0.3, 0.0),
            (p + "self_attn.v_proj.weight", [Hkv * d, D], 0.4, 0.3, 0.0),
            (p + "self_attn.o_proj.weight", [D, H * d], 0.5, 0.3, 0.0),
            (p + "post_attention_layernorm.weight", [D], 0.6, 0.2, 1.0),
            (p + "mlp.gate_proj.weight", [I, D], 0.7, 0.3, 0.0),
            (p + "mlp.up_proj.weight", [I, D], 0.8, 0.3, 0.0),
            (p + "mlp.down_proj.weight", [D, I], 0.9, 0.3, 0.0),
        ]
        if qkv_bias:
            specs += [
                (p + "self_attn.q_proj.bias", [H * d], 1.1, 0.2, 0.0),
                (p + "self_attn.k_proj.bias", [Hkv * d], 1.2, 0.2, 0.0),
                (p + "self_attn.v_proj.bias", [Hkv * d], 1.3, 0.2, 0.0),
            ]
        if cfg["model_type"] == "qwen3":
            specs += [
                (p + "self_attn.q_norm.weight", [d], 1.4, 0.3, 1.0),
                (p + "self_attn.k_norm.weight", [d], 1.5, 0.3, 1.0),
            ]
    specs.append(("model.norm.weight", [D], 1.6, 0.2, 1.0))
    if not cfg["tie_word_embeddings"]:
        specs.append(("lm_head.weight", [V, D], 1.7, 0.5, 0.0))
    return [(n, s, ph + 0.01 * k, sc, off) for k, (n, s, ph, sc, off) in enumerate(specs)]


def forward(cfg, W, ids):
    """Logits [T, V] for one unpadded sequence."""
    H, Hkv, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, theta = cfg["rms_norm_eps"], cfg["rope_theta"]
    group = H // Hkv
    T = len(ids)
    positions = list(range(T))
    h = W["model.embed_tokens.weight"][ids]  # [T, D]

    def lin(x, name):
        y = x @ W[name + ".weight"].T
        if name + ".bias" in W:
            y = y + W[name + ".bias"]
        return y

    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        x = rms_norm(h, W[p + "input_layernorm.weight"], eps)
        q = lin(x, p + "self_attn.q_proj").reshape(T, H, d)
        k = lin(x, p + "self_attn.k_proj").reshape(T, Hkv, d)
        v = lin(x, p + "self_attn.v_proj").reshape(T, Hkv, d)
        if cfg["model_type"] == "qwen3":
            q = rms_norm(q, W[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, W[p + "self_attn.k_norm.weight"], eps)
        heads = []
        k_rot = [rope(k[:, j, :], positions, theta) for j in range(Hkv)]
        for hh in range(H):
            kv = hh // group
            qh = rope(q[:, hh, :], positions, theta)
            scores = qh @ k_rot[kv].T / math.sqrt(d)
            for i in range(T):
                for j in range(T):
                    if j > i:
                        scores[i, j] = -math.inf
            heads.append(torch.softmax(scores, dim=-1) @ v[:, kv, :])
        attn = torch.cat(heads, dim=-1)  # [T, H*d], head-major like the reshape
        h = h + lin(attn, p + "self_attn.o_proj")
        x = rms_norm(h, W[p + "post_attention_layernorm.weight"], eps)
        gate = lin(x, p + "mlp.gate_proj")
        mlp = lin(gate * torch.sigmoid(gate) * lin(x, p + "mlp.up_proj"), p + "mlp.down_proj")
        h = h + mlp
    h = rms_norm(h, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]
    return h @ head.T


CONFIGS = [
    # Qwen2: q/k/v biases, tied embeddings, 4 query heads on 2 kv heads.
    {"model_type": "qwen2", "vocab_size": 48, "hidden_size": 32, "intermediate_size": 48,
     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
     "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True,
     "attention_bias": False, "max_position_embeddings": 64, "torch_dtype": "float32"},
    # Qwen3: q/k norm, head_dim (12) != hidden/heads (8), untied, large theta.
    {"model_type": "qwen3", "vocab_size": 40, "hidden_size": 32, "intermediate_size": 40,
     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
     "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": False,
     "attention_bias": False, "max_position_embeddings": 64, "torch_dtype": "float32"},
    # Llama: no biases, one kv head for 4 query heads, eps 1e-5, theta 500000.
    {"model_type": "llama", "vocab_size": 36, "hidden_size": 24, "intermediate_size": 40,
     "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 6,
     "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False,
     "attention_bias": False, "max_position_embeddings": 64, "torch_dtype": "float32"},
]

# Two sequences of different lengths: the C++ side left-pads the shorter one.
SEQUENCES = [[3, 17, 5, 30, 11, 2, 7], [9, 1, 22, 14]]


def main():
    out = {"formula": "offset + scale * sin(0.37 * i + phase)", "torch": torch.__version__}

    x_spec = ([3, 16], 0.25, 1.5, 0.3)
    w_spec = ([16], 0.75, 0.4, 1.0)
    eps = 1e-5
    out["rms_norm"] = {
        "x": x_spec, "weight": w_spec, "eps": eps,
        "expected": rms_norm(formula(*x_spec), formula(*w_spec), eps).flatten().tolist(),
    }

    # RoPE on [heads=2, T=4, d=8] at explicit positions.
    r_spec = ([2, 4, 8], 0.5, 1.0, 0.0)
    positions = [0, 1, 5, 17]
    theta = 10000.0
    xr = formula(*r_spec)
    rotated = torch.stack([rope(xr[hh], positions, theta) for hh in range(2)])
    out["rope"] = {"x": r_spec, "positions": positions, "theta": theta,
                   "expected": rotated.flatten().tolist()}

    models = []
    for cfg in CONFIGS:
        specs = param_specs(cfg)
        W = {n: formula(s, ph, sc, off) for n, s, ph, sc, off in specs}
        logits, logprobs = [], []
        for seq in SEQUENCES:
            lg = forward(cfg, W, seq)
            logits.append(lg.flatten().tolist())
            lp = torch.log_softmax(lg, dim=-1)
            logprobs.append([0.0] + [lp[t - 1, seq[t]].item() for t in range(1, len(seq))])
        models.append({"config": cfg, "params": [
            {"name": n, "shape": s, "phase": ph, "scale": sc, "offset": off}
            for n, s, ph, sc, off in specs], "sequences": SEQUENCES, "logits": logits,
            "token_log_probs": logprobs})
    out["models"] = models
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
