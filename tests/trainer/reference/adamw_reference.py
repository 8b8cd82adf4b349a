#!/usr/bin/python3
"""Independent reference for egca's MultiTensorAdamW (tests/trainer/adamw_test.cpp).

PyTorch's own Python AdamW (torch.optim.AdamW, foreach=False, float32 on the CPU) run on
parameters and gradients that come from a closed-form formula, so nothing binary is
checked in and the C++ test rebuilds the same inputs:
  value[i] = offset + scale * sin(0.37 * i + phase)      (i = flat row-major index,
                                                          computed in float64, then float32)
Parameter k has phase 0.1 * k; the gradient of parameter k at step s (1-based) has phase
1.3 * s + 0.7 * k and scale 10^-(k mod 4) (gradients of very different sizes, as in a model).
The learning rate changes between steps (lr_s = lr * s / steps, as a warm-up would).

Usage: /usr/bin/python3 tests/trainer/reference/adamw_reference.py > \
           tests/trainer/reference/adamw_reference_baseline.json
"""
import json
import math

import torch

SHAPES = [[7, 5], [13], [3, 4, 2], [1]]
STEPS = 5


def formula(shape, phase, scale, offset=0.0):
    n = 1
    for d in shape:
        n *= d
    i = torch.arange(n, dtype=torch.float64)
    return (offset + scale * torch.sin(0.37 * i + phase)).reshape(shape).to(torch.float32)


def run(lr, weight_decay, amsgrad, betas, eps):
    params = [torch.nn.Parameter(formula(s, 0.1 * k, 0.5)) for k, s in enumerate(SHAPES)]
    kwargs = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)
    if "foreach" in torch.optim.AdamW.__init__.__code__.co_varnames:
        kwargs["foreach"] = False
    opt = torch.optim.AdamW(params, **kwargs)
    for s in range(1, STEPS + 1):
        for g in opt.param_groups:
            g["lr"] = lr * s / STEPS
        for k, p in enumerate(params):
            p.grad = formula(SHAPES[k], 1.3 * s + 0.7 * k, 10.0 ** -(k % 4))
        opt.step()
    return [p.detach().to(torch.float64).reshape(-1).tolist() for p in params]


def main():
    cases = []
    for lr, wd, ams in [(1e-2, 0.0, False), (1e-2, 0.1, False), (3e-3, 0.01, True)]:
        betas, eps = (0.9, 0.999), 1e-8
        cases.append({"lr": lr, "weight_decay": wd, "amsgrad": ams, "betas": list(betas),
                      "eps": eps, "expected": run(lr, wd, ams, betas, eps)})
    print(json.dumps({"torch": torch.__version__, "shapes": SHAPES, "steps": STEPS,
                      "cases": cases}))


if __name__ == "__main__":
    main()
