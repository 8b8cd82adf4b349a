#!/usr/bin/python3
"""Same-run baseline for bench/model: the same decoder and training step in Python torch.

Loads the checkpoint directory the C++ benchmark just wrote (config.json + model.safetensors,
read here with a from-scratch safetensors parser, so the C++ writer is also checked), and
serves model_bench's commands, one per stdin line, one JSON object per stdout line:
  warmup N     N untimed steps; replies the first step's loss
  steps N      N timed forward+backward steps of the teacher-forced mean token log-prob
  generate 1|0 one timed greedy generation with (1) or without (0) the KV cache
  profile PATH one step under the autograd profiler, written as a chrome trace
Standalone: printf 'warmup 2\nsteps 5\n' | model_step_baseline.py --checkpoint DIR

Written the way a transformers-style PyTorch implementation is (vectorized heads, repeat_kv,
rotate_half RoPE, float32 RMSNorm/softmax), i.e. the baseline a user would otherwise run,
with the same implementation choices as the C++ model where they matter for speed (only the
T-1 predicting positions go through lm_head in the training step).
"""
import argparse
import json
import math
import resource
import struct
import sys
import time

import torch
import torch.nn.functional as F


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    dtypes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        t = torch.frombuffer(bytearray(data[base + b:base + end]), dtype=dtypes[e["dtype"]])
        out[name] = t.reshape(e["shape"]).float()
    return out


class Decoder(torch.nn.Module):
    def __init__(self, cfg, weights):
        super().__init__()
        self.cfg = cfg
        self.p = torch.nn.ParameterDict(
            {k.replace(".", "__"): torch.nn.Parameter(v) for k, v in weights.items()})
        self.H = cfg["num_attention_heads"]
        self.Hkv = cfg["num_key_value_heads"]
        self.d = cfg["head_dim"]
        self.eps = cfg["rms_norm_eps"]
        self.qk_norm = cfg["model_type"] == "qwen3"
        self.bias = cfg["model_type"] == "qwen2" or cfg.get("attention_bias", False)
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.d, 2).float() / self.d))
        self.register_buffer("inv_freq", inv)

    def w(self, name):
        return self.p[name.replace(".", "__")]

    def norm(self, x, name):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.w(name) * h.to(x.dtype)

    def lin(self, x, name, bias=False):
        return F.linear(x, self.w(name + ".weight"), self.w(name + ".bias") if bias else None)

    @staticmethod
    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def head(self, h):
        name = "model.embed_tokens.weight" if self.cfg["tie_word_embeddings"] else "lm_head.weight"
        return F.linear(h, self.w(name)).float()

    def forward(self, ids, cache=None):
        return self.head(self.hidden(ids, cache))

    def hidden(self, ids, cache=None):
        """States after the final norm, [B, T, hidden]."""
        B, T = ids.shape
        past = 0 if cache is None or not cache else cache[0][0].shape[2]
        pos = torch.arange(past, past + T).float()
        freqs = pos[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        mask = torch.full((T, past + T), float("-inf")).triu(past + 1)
        h = F.embedding(ids, self.w("model.embed_tokens.weight"))
        for l in range(self.cfg["num_hidden_layers"]):
            p = f"model.layers.{l}."
            x = self.norm(h, p + "input_layernorm.weight")
            q = self.lin(x, p + "self_attn.q_proj", self.bias).view(B, T, self.H, self.d)
            k = self.lin(x, p + "self_attn.k_proj", self.bias).view(B, T, self.Hkv, self.d)
            v = self.lin(x, p + "self_attn.v_proj", self.bias).view(B, T, self.Hkv, self.d)
            if self.qk_norm:
                q = self.norm(q, p + "self_attn.q_norm.weight")
                k = self.norm(k, p + "self_attn.k_norm.weight")
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            q = q * cos + self.rotate_half(q) * sin
            k = k * cos + self.rotate_half(k) * sin
            if cache is not None:
                if len(cache) > l:
                    k = torch.cat((cache[l][0], k), 2)
                    v = torch.cat((cache[l][1], v), 2)
                    cache[l] = (k, v)
                else:
                    cache.append((k, v))
            rep = self.H // self.Hkv
            k = k[:, :, None].expand(B, self.Hkv, rep, k.shape[2], self.d).reshape(B, self.H, -1, self.d)
            v = v[:, :, None].expand(B, self.Hkv, rep, v.shape[2], self.d).reshape(B, self.H, -1, self.d)
            s = (q @ k.transpose(-2, -1)).float() / math.sqrt(self.d) + mask
            a = torch.softmax(s, -1).to(v.dtype) @ v
            h = h + self.lin(a.transpose(1, 2).reshape(B, T, self.H * self.d), p + "self_attn.o_proj")
            x = self.norm(h, p + "post_attention_layernorm.weight")
            h = h + self.lin(F.silu(self.lin(x, p + "mlp.gate_proj")) * self.lin(x, p + "mlp.up_proj"),
                             p + "mlp.down_proj")
        return self.norm(h, "model.norm.weight")


def fixed_ids(batch, seq, vocab):
    i = torch.arange(batch * seq)
    return ((i * 13 + 7) % vocab).view(batch, seq)


class Meter:
    """CPU/wall time, user/system time and minor page faults of this process, measured the
    same way as the C++ side (process CPU clock, getrusage)."""

    def __init__(self):
        self.cpu, self.wall, self.ru = time.process_time(), time.perf_counter(), \
            resource.getrusage(resource.RUSAGE_SELF)

    def stop(self):
        cpu, wall = time.process_time(), time.perf_counter()
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return {"cpu_ms": 1000 * (cpu - self.cpu), "wall_ms": 1000 * (wall - self.wall),
                "user_ms": 1000 * (ru.ru_utime - self.ru.ru_utime),
                "sys_ms": 1000 * (ru.ru_stime - self.ru.ru_stime),
                "minflt": ru.ru_minflt - self.ru.ru_minflt}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--gen-batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    cfg = json.load(open(f"{args.checkpoint}/config.json"))
    model = Decoder(cfg, load_safetensors(f"{args.checkpoint}/model.safetensors"))
    ids = fixed_ids(args.batch, args.seq, cfg["vocab_size"])

    def step():
        # Only positions 0..T-2 predict a token: project just those (as the C++ side does),
        # rather than slicing [B, T, V] logits, which costs a copy and a zero-filled gradient.
        logits = model.head(model.hidden(ids)[:, :-1])
        lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        loss = -lp.mean()
        loss.backward()
        for p in model.parameters():
            p.grad = None
        return loss.item()

    def generate(use_cache):
        prompt = fixed_ids(args.gen_batch, args.prompt, cfg["vocab_size"])
        seq = prompt
        with torch.no_grad():
            cache = [] if use_cache else None
            logits = model(prompt, cache)[:, -1]
            for _ in range(args.new_tokens - 1):
                nxt = logits.argmax(-1, keepdim=True)
                seq = torch.cat((seq, nxt), 1)
                logits = model(nxt, cache)[:, -1] if use_cache else model(seq)[:, -1]
        return seq

    # One command per line on stdin, one JSON object per line on stdout; EOF ends.
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "warmup":
            losses = [step() for _ in range(int(cmd[1]))]
            reply = {"loss": losses[0]}
        elif cmd[0] == "steps":
            samples = []
            for _ in range(int(cmd[1])):
                m = Meter()
                step()
                samples.append(m.stop())
            reply = {"steps": samples}
        elif cmd[0] == "generate":
            m = Meter()
            seq = generate(cmd[1] == "1")
            reply = m.stop()
            reply["tokens"] = args.gen_batch * args.new_tokens
        elif cmd[0] == "profile":
            with torch.autograd.profiler.profile(use_kineto=False) as prof:
                step()
            prof.export_chrome_trace(cmd[1])
            reply = {"trace": cmd[1]}
        else:
            reply = {"error": f"unknown command {cmd[0]!r}"}
        reply.update(torch=torch.__version__, threads=torch.get_num_threads())
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
