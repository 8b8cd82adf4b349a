#!/usr/bin/python3
"""Python side of bench/train_step: the same GRPO training step on the same checkpoint.

  train_step_baseline.py --checkpoint DIR --device cpu|cuda --dtype float32|bfloat16
                         --batch B --seq T --prompt P --steps N --warmup W [--impl auto|transformers|baseline]
                         [--gen-prompts P --gen-samples G --gen-tokens N --gen-reps R]

The step: teacher-forced log-probs of the completion tokens (positions P..T-1 of each row),
the GRPO clipped surrogate with the same fixed advantages as the C++ side (pi_old = the
detached log-probs, so rho = 1; beta = 0), backward, AdamW (lr 1e-6), zero_grad.
impl=transformers: AutoModelForCausalLM with attn_implementation="sdpa" (needs
transformers); impl=baseline: bench/model's transformers-style decoder; auto: transformers
when importable. Prints one JSON object: impl, median step seconds, tokens/s, peak memory.
--gen-prompts P > 0 (transformers only): after the steps, generate() with do_sample at
temperature 1, G samples per prompt, exactly N new tokens (min_new_tokens = N), the median
tokens/s of R runs after one warm-up (gen_tokens_per_s).
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def fixed_ids(batch, seq, vocab):
    i = torch.arange(batch * seq)
    return ((i * 13 + 7) % vocab).view(batch, seq)


def fixed_advantages(batch, width):
    # The C++ side builds the same values: a_{i,t} = ((i * 7 + t) % 11 - 5) / (10 * width).
    i = torch.arange(batch)[:, None]
    t = torch.arange(width)[None, :]
    return (((i * 7 + t) % 11) - 5).float() / (10.0 * width)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--impl", default="auto")
    ap.add_argument("--gen-prompts", type=int, default=0)
    ap.add_argument("--gen-samples", type=int, default=8)
    ap.add_argument("--gen-tokens", type=int, default=256)
    ap.add_argument("--gen-reps", type=int, default=3)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[a.dtype]
    dev = torch.device(a.device)
    cfg = json.load(open(os.path.join(a.checkpoint, "config.json")))

    impl = a.impl
    if impl in ("auto", "transformers"):
        try:
            import transformers  # noqa: F401
            impl = "transformers"
        except ImportError:
            if a.impl == "transformers":
                raise
            impl = "baseline"
    if impl == "transformers":
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained(a.checkpoint, torch_dtype=dtype,
                                                     attn_implementation="sdpa").to(dev)
        body, head = model.model, model.lm_head

        def hidden(ids):
            return body(input_ids=ids).last_hidden_state

        def logits(h):
            return head(h).float()
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model"))
        import model_step_baseline as mb
        if hasattr(torch, "set_default_device"):
            torch.set_default_device(dev)
        weights = {k: v.to(dtype) for k, v in mb.load_safetensors(
            os.path.join(a.checkpoint, "model.safetensors")).items()}
        model = mb.Decoder(cfg, weights).to(dev)
        hidden = model.hidden
        logits = model.head
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-6)
    ids = fixed_ids(a.batch, a.seq, cfg["vocab_size"]).to(dev)
    width = a.seq - a.prompt
    adv = fixed_advantages(a.batch, width).to(dev)
    targets = ids[:, a.prompt:]

    def step():
        h = hidden(ids)                                    # [B, T, H]
        lp = torch.log_softmax(logits(h[:, a.prompt - 1:-1]), -1)  # [B, W, V]
        lp = lp.gather(-1, targets[..., None]).squeeze(-1)  # [B, W]
        ratio = torch.exp(lp - lp.detach())
        clipped = torch.clamp(ratio, 0.8, 1.2)
        loss = -torch.min(ratio * adv, clipped * adv).sum() / a.batch
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return lp.detach().float().mean().item()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    first = None
    for _ in range(a.warmup):
        loss = step()
        first = loss if first is None else first
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(a.steps):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    peak = (torch.cuda.max_memory_allocated() if dev.type == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    med = statistics.median(times)
    result = {"impl": impl, "torch": torch.__version__, "step_s": med,
              "tokens_per_s": a.batch * a.seq / med, "peak_bytes": peak, "first_mean_logprob": first}
    if a.gen_prompts > 0:
        if impl != "transformers":
            result["gen_note"] = "generate needs transformers"
        else:
            model.eval()
            prompts = fixed_ids(a.batch if a.batch >= a.gen_prompts else a.gen_prompts, a.seq,
                                cfg["vocab_size"])[:a.gen_prompts, :a.prompt].to(dev)
            inputs = prompts.repeat_interleave(a.gen_samples, 0)
            rates = []
            with torch.no_grad():
                for r in range(a.gen_reps + 1):  # run 0 warms up
                    torch.manual_seed(r + 1)
                    sync()
                    t0 = time.perf_counter()
                    out = model.generate(inputs, attention_mask=torch.ones_like(inputs), do_sample=True,
                                         temperature=1.0, top_k=0, top_p=1.0,
                                         max_new_tokens=a.gen_tokens, min_new_tokens=a.gen_tokens,
                                         pad_token_id=0)
                    sync()
                    n = (out.shape[1] - inputs.shape[1]) * out.shape[0]
                    if r > 0:
                        rates.append(n / (time.perf_counter() - t0))
            result["gen_tokens_per_s"] = statistics.median(rates)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
