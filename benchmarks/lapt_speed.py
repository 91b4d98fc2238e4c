"""LAPT throughput: ``vocab_transfer.training.lapt.train`` against HF ``Trainer`` on the same model, data and
hyperparameters.

Model: the demo's XLM-R architecture (hidden 192, 4 layers, 4 heads, FFN 768) with a 4,000-token
vocabulary; data: random token blocks of ``--seq-len``; AdamW (0.9, 0.999), ε 1e-8, no weight decay,
lr 5e-4 constant after 10% warmup, clipping 1.0, 15% masking (80/10/10). Both time ``--steps`` optimizer steps
after ``--warmup-steps`` untimed ones; tokens/s = steps × batch × seq_len / time. Ours is timed as the
difference of a run of warmup + steps and one of warmup steps, so a run's fixed costs cancel; ``--compile``
trains with ``compile: true`` (each transformer layer compiled).

    python benchmarks/lapt_speed.py                  # CPU, 2 threads
    python benchmarks/lapt_speed.py --hidden 768 --layers 12 --heads 12 --ffn 3072 --vocab 50000 \\
        --batch 32 --seq-len 256 --steps 50         # xlm-roberta-base size (on a GPU machine)

On a GPU it also reports model-FLOPs utilization (MFU, PaLM App. B): training FLOPs per token
6·N + 12·L·d·T (N = non-embedding parameters, L layers, d hidden size, T sequence length) plus
6·d·V·0.15 for the MLM head on the masked positions, times tokens/s, over the GPU's dense bf16 peak
(``--peak-tflops``, default from the device name: H100/H200 989, A100 312). Goal for xlm-roberta-base
in bf16: MFU ≥ 40%.

Writes ``benchmarks/out/lapt_speed.csv``. The speed difference comes mostly from computing the MLM
head on the masked positions only (HF's MaskedLM head projects every position onto the vocabulary).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

OUT = Path(__file__).resolve().parent / "out"


def Tok(vocab: int):
    """A real fast tokenizer of ``vocab`` WordPiece tokens (random ids stand in for text): <s> <pad> </s>
    <unk> at 0-3, <mask> last, as XLM-R has them."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    words = ["<s>", "<pad>", "</s>", "<unk>"] + [f"w{i}" for i in range(4, vocab - 1)] + ["<mask>"]
    backend = Tokenizer(models.WordPiece({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", pad_token="<pad>",
                                   eos_token="</s>", unk_token="<unk>", mask_token="<mask>")


def model_and_data(a):
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    cfg = XLMRobertaConfig(vocab_size=a.vocab, hidden_size=a.hidden, num_hidden_layers=a.layers,
                           num_attention_heads=a.heads, intermediate_size=a.ffn,
                           max_position_embeddings=a.seq_len + 2, pad_token_id=1, bos_token_id=0,
                           eos_token_id=2)
    torch.manual_seed(0)
    model = XLMRobertaForMaskedLM(cfg)
    g = torch.Generator().manual_seed(0)
    blocks = torch.randint(4, a.vocab - 1, (max(2048, a.batch * (a.steps + a.warmup_steps)), a.seq_len),
                           generator=g)
    return model, blocks


PEAK_BF16_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0, "L40S": 362.0, "A10": 125.0}


def model_flops_per_token(a) -> float:
    """Training FLOPs per token (forward + backward): 6 N + 12 L d T, plus the MLM head on 15% of tokens."""
    d, L, T = a.hidden, a.layers, a.seq_len
    n_body = L * (4 * d * d + 2 * d * a.ffn + 9 * d + a.ffn)  # attention, FFN, biases, 2 LayerNorms
    return 6 * n_body + 12 * L * d * T + 6 * d * a.vocab * 0.15


def peak_tflops(a) -> float | None:
    if a.peak_tflops:
        return a.peak_tflops
    name = torch.cuda.get_device_name() if torch.cuda.is_available() else ""
    return next((v for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)


def ours(a) -> float:
    from vocab_transfer.training.lapt import LaptConfig, train

    model, blocks = model_and_data(a)
    tok = Tok(a.vocab)
    cuda = torch.cuda.is_available()

    def run(steps: int, folder: str) -> float:
        cfg = LaptConfig.parse(dict(steps=steps, batch_size=a.batch, seq_len=a.seq_len, lr=5e-4,
                                        eval_every=10**9, eval_sequences=1, checkpoint_every=10**9, seed=0,
                                        compile=a.compile))
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        train(model, tok, blocks, blocks[:1], cfg, checkpoint_dir=folder)
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp:
        run(a.warmup_steps, tmp + "/warm")  # compiles (compile: true), allocates, warms the kernels
        short = run(a.warmup_steps, tmp + "/short")
        long = run(a.warmup_steps + a.steps, tmp + "/long")
    # a run's fixed costs (the vocabulary's byte lengths, two held-out evaluations, checkpoint folders) cancel
    return long - short


def hf_trainer(a) -> float:
    from transformers import DataCollatorForLanguageModeling, Trainer, TrainerCallback, TrainingArguments

    model, blocks = model_and_data(a)
    tok = Tok(a.vocab)
    assert tok.mask_token_id == a.vocab - 1 and len(tok) == a.vocab

    class Collator(DataCollatorForLanguageModeling):  # HF's masking of token ids
        def __init__(self):
            self.tokenizer, self.mlm, self.mlm_probability, self.return_tensors = tok, True, 0.15, "pt"
            self.pad_to_multiple_of, self.seed, self.generator = None, None, None
            self.mask_replace_prob, self.random_replace_prob = 0.8, 0.1

        def __call__(self, features):
            ids = torch.stack([torch.as_tensor(f["input_ids"]) for f in features])
            inputs, labels = self.torch_mask_tokens(ids)
            return {"input_ids": inputs, "labels": labels}

        def torch_mask_tokens(self, inputs):
            labels = inputs.clone()
            prob = torch.full(labels.shape, 0.15)
            prob.masked_fill_(torch.isin(labels, torch.tensor(tok.all_special_ids)), 0.0)
            masked = torch.bernoulli(prob).bool()
            labels[~masked] = -100
            replaced = torch.bernoulli(torch.full(labels.shape, 0.8)).bool() & masked
            inputs[replaced] = tok.mask_token_id
            rand = torch.bernoulli(torch.full(labels.shape, 0.5)).bool() & masked & ~replaced
            inputs[rand] = torch.randint(a.vocab, labels.shape)[rand]
            return inputs, labels

    times = {}

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == a.warmup_steps:
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                times["start"] = time.perf_counter()

        def on_train_end(self, args, state, control, **kw):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            times["end"] = time.perf_counter()

    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(output_dir=tmp, per_device_train_batch_size=a.batch,
                                 max_steps=a.steps + a.warmup_steps, learning_rate=5e-4, weight_decay=0.0,
                                 adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, max_grad_norm=1.0,
                                 lr_scheduler_type="constant_with_warmup", warmup_steps=max(1, a.steps // 10),
                                 logging_strategy="no", save_strategy="no", report_to=[], disable_tqdm=True,
                                 dataloader_num_workers=0,
                                 bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported(),
                                 use_cpu=not torch.cuda.is_available(), seed=0)
        trainer = Trainer(model=model, args=args, train_dataset=[{"input_ids": b} for b in blocks],
                          data_collator=Collator(), callbacks=[Clock()])
        trainer.train()
    return times["end"] - times["start"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hidden", type=int, default=192)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=768)
    p.add_argument("--vocab", type=int, default=4000)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup-steps", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--compile", action="store_true",
                   help="ours with lapt compile: true (torch.compile per layer)")
    p.add_argument("--out", default="lapt_speed.csv", help="file name under benchmarks/out/")
    p.add_argument("--skip-hf", action="store_true", help="time ours only")
    p.add_argument("--peak-tflops", type=float, help="dense bf16 peak of the GPU (default: from its name)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    rows = []
    trainers = [("vocab_transfer.training.lapt" + (" (compile)" if a.compile else ""), ours)]
    for name, fn in trainers + ([] if a.skip_hf else [("HF Trainer", hf_trainer)]):
        seconds = fn(a)
        rows.append({"trainer": name, "steps": a.steps, "seconds": round(seconds, 2),
                     "tokens_per_s": round(a.steps * a.batch * a.seq_len / seconds)})
        print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    if not a.skip_hf:
        df["ratio_vs_hf"] = (df["tokens_per_s"]
                             / df.loc[df.trainer == "HF Trainer", "tokens_per_s"].item()).round(2)
    df["model_tflops_per_s"] = (df["tokens_per_s"] * model_flops_per_token(a) / 1e12).round(3)
    peak = peak_tflops(a)
    if torch.cuda.is_available() and peak:
        df["mfu"] = (df["model_tflops_per_s"] / peak).round(3)
    df.insert(1, "setting", f"h{a.hidden} L{a.layers} V{a.vocab} batch {a.batch}x{a.seq_len}, "
                            f"{'cuda' if torch.cuda.is_available() else f'cpu {a.threads} threads'}")
    OUT.mkdir(exist_ok=True)
    df.to_csv(OUT / a.out, index=False)
    print(df.to_markdown(index=False))


if __name__ == "__main__":
    main()
