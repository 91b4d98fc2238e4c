"""One training step of the demo's source model on the CPU with torch's dropout and with the CPU dropout
(``vocab_transfer.training.cpu_dropout.use_fast_dropout``), the two timed alternately.

The model is ``config.yaml``'s source model (XLM-R architecture, hidden 192, 4 layers, 4 heads, FFN 768,
vocabulary 16,000, dropout 0.1) on a batch of 32 × 128 random tokens with 15% of them labelled; a step is the
masked-only MLM loss, backward and AdamW, as ``training/pretrain.py`` takes it. Each round builds the model
afresh (same seed), warms up 3 steps and times ``--steps`` steps; the table gives the median over ``--rounds``
rounds per variant. ``--profile`` adds torch's operator profile of 3 steps of each variant.

    python benchmarks/cpu_dropout.py                      # 3 rounds x 30 steps, 2 threads
    python benchmarks/cpu_dropout.py --threads 1 --profile
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch


def build(fast: bool):
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    from vocab_transfer.training.cpu_dropout import use_fast_dropout

    cfg = XLMRobertaConfig(vocab_size=16000, hidden_size=192, num_hidden_layers=4, num_attention_heads=4,
                           intermediate_size=768, max_position_embeddings=130, pad_token_id=1,
                           hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    torch.manual_seed(0)
    model = XLMRobertaForMaskedLM(cfg).train()
    if fast:
        use_fast_dropout(model, torch.device("cpu"))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    # what the workflow sets for its jobs (rules/common.smk): no page faults for freed activations every step
    os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(2**32))
    os.environ.setdefault("MALLOC_TRIM_THRESHOLD_", str(2**32))
    torch.set_num_threads(args.threads)
    from vocab_transfer.source_model import masked_lm_loss

    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 16000, (32, 128), generator=g)
    labels = torch.full_like(ids, -100)
    chosen = torch.rand(ids.shape, generator=g) < 0.15
    labels[chosen] = ids[chosen]

    def step(model, opt) -> None:
        masked_lm_loss(model, ids, labels).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    times: dict[str, list[float]] = {"torch dropout": [], "CPU dropout": []}
    for _ in range(args.rounds):
        for name in times:
            model, opt = build(name == "CPU dropout")
            for _ in range(3):
                step(model, opt)
            start = time.perf_counter()
            for _ in range(args.steps):
                step(model, opt)
            times[name].append((time.perf_counter() - start) / args.steps * 1e3)
            print(f"{name}: {times[name][-1]:.0f} ms per step", flush=True)
    print(
        f"\n{platform.processor() or platform.machine()}, {args.threads} threads, torch {torch.__version__}; "
        f"{args.rounds} rounds x {args.steps} steps, alternating\n")
    print("| dropout | ms per step (median) | rounds |\n|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {statistics.median(t):.0f} | {', '.join(f'{x:.0f}' for x in t)} |")
    if args.profile:
        from torch.profiler import profile

        for name in times:
            model, opt = build(name == "CPU dropout")
            step(model, opt)
            with profile() as prof:
                for _ in range(3):
                    step(model, opt)
            print(f"\n{name}:\n" + prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8))


if __name__ == "__main__":
    main()
