"""A decoder LLM's vocabulary transfer without loading the model: FOCUS on the two embedding matrices read
from the safetensors shards (``read_embedding_rows``), then the shard-preserving export (``export_init``),
against the whole-model path of the public tools (``AutoModelForCausalLM.from_pretrained(dtype=bfloat16)``,
resize, set the rows, ``save_pretrained``). Targets: peak RSS ≤ 3 GB, init ≤ 60 s (fastText training
excluded), export ≤ 2× the time of copying the shards with ``cp``.

Checkpoint: synthetic, shaped like Mistral-7B (vocabulary 32,000 × hidden 4,096, untied ``lm_head``, GQA with
8 KV heads, FFN 14,336, bf16, the real tensor names), ``--layers`` of its 32 (8 by default: 4.0 GB instead of
14.5 GB) in ``--shard-gb`` shards, random normal weights. FOCUS's inputs are synthetic too: a
``--target``-token target vocabulary (WordLevel tokenizer of made-up token strings) of which ``--overlap``
share the source's tokens, and clustered random 300-d vectors standing in for token-level fastText
(``--vector-rate`` of tokens have one), so the init times the method and the file I/O, not fastText training.
Every case runs in a fresh subprocess; "peak RSS" is that process's maximum resident memory (``wait4``),
"time" the work itself (imports excluded), "process" the subprocess's wall time. The page cache is warm (the
checkpoint was just written).

    python benchmarks/llm_transfer.py                 # 8 layers, ~4 GB checkpoint, deleted at the end
    python benchmarks/llm_transfer.py --layers 32     # the full 7B shape: 14.5 GB of disk, ~16 GB RAM for
                                                        the HF path

Writes ``benchmarks/out/llm_transfer.csv`` and ``.md``; the checkpoint and the outputs go to ``--workdir``
(default ``benchmarks/out/llm_transfer``), removed afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
CASES = ("cp", "focus", "export", "hf")


def mistral_config(a):
    from transformers import MistralConfig

    return MistralConfig(vocab_size=32_000, hidden_size=4096, intermediate_size=14_336,
                         num_hidden_layers=a.layers, num_attention_heads=32, num_key_value_heads=8,
                         max_position_embeddings=32_768, tie_word_embeddings=False, bos_token_id=1,
                         eos_token_id=2, dtype="bfloat16")


def mistral_shapes(c) -> dict[str, tuple[int, ...]]:
    """The tensor names and shapes of ``MistralForCausalLM`` (as in mistralai/Mistral-7B-v0.1's shards)."""
    d, kv, f = (c.hidden_size, c.num_key_value_heads * c.hidden_size // c.num_attention_heads,
                c.intermediate_size)
    shapes = {"model.embed_tokens.weight": (c.vocab_size, d)}
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        shapes |= {p + "input_layernorm.weight": (d,), p + "self_attn.q_proj.weight": (d, d),
                   p + "self_attn.k_proj.weight": (kv, d), p + "self_attn.v_proj.weight": (kv, d),
                   p + "self_attn.o_proj.weight": (d, d), p + "post_attention_layernorm.weight": (d,),
                   p + "mlp.gate_proj.weight": (f, d), p + "mlp.up_proj.weight": (f, d),
                   p + "mlp.down_proj.weight": (d, f)}
    return shapes | {"model.norm.weight": (d,), "lm_head.weight": (c.vocab_size, d)}


def write_checkpoint(a, folder: Path) -> None:
    """``save_pretrained``'s layout: ``model-0000i-of-0000n.safetensors`` of at most ``--shard-gb`` each, the
    index, ``config.json``; one shard in memory at a time."""
    import torch
    from safetensors.torch import save_file

    config = mistral_config(a)
    shapes, limit = mistral_shapes(config), a.shard_gb * 1e9
    shards, size = [[]], 0
    for name, shape in shapes.items():
        n = 2 * torch.Size(shape).numel()
        if size + n > limit and shards[-1]:
            shards.append([])
            size = 0
        shards[-1].append(name)
        size += n
    folder.mkdir(parents=True, exist_ok=True)
    g, weight_map = torch.Generator().manual_seed(0), {}
    for i, names in enumerate(shards):
        file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        tensors = {n: (torch.randn(shapes[n], generator=g) * 0.02).bfloat16() for n in names}
        save_file(tensors, folder / file, metadata={"format": "pt"})
        weight_map |= dict.fromkeys(names, file)
        del tensors
    total = sum(2 * torch.Size(s).numel() for s in shapes.values())
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2) + "\n")
    config.save_pretrained(folder)


def write_target_tokenizer(a, folder: Path) -> None:
    """A ``--target``-token WordLevel tokenizer of made-up token strings, Llama's specials first."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2} | {f"▁t{i}": i for i in range(3, a.target)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>",
                            unk_token="<unk>").save_pretrained(folder)


def clustered(n: int, dim: int, g, clusters: int = 5000, noise: float = 0.6):
    """Vectors with neighbourhood structure, like trained fastText vectors (as in ``init_methods.py``)."""
    import torch

    centres = torch.randn(clusters, dim, generator=g)
    return centres[torch.randint(clusters, (n,), generator=g)] + noise * torch.randn(n, dim, generator=g)


def run_case(a) -> dict:
    """One case in this (fresh) process: returns its time and what it produced."""
    import torch

    torch.set_num_threads(a.threads)
    work = Path(a.workdir)
    source, init, tokenizer = work / "source", work / "init.safetensors", work / "tokenizer"
    t0 = time.perf_counter()
    if a.case == "write":
        write_checkpoint(a, source)
        write_target_tokenizer(a, tokenizer)
        shards = list(source.glob("*.safetensors"))
        detail = f"{len(shards)} shards, {sum(f.stat().st_size for f in shards) / 1e9:.2f} GB"
    elif a.case == "focus":
        from vocab_transfer.io import write_tensors
        from vocab_transfer.methods.focus import focus_init
        from vocab_transfer.source_model import read_embedding_rows

        g = torch.Generator().manual_seed(0)
        n_t, n_ov = a.target, int(a.overlap * a.target)
        ov_t, ov_s = torch.randperm(n_t, generator=g)[:n_ov], torch.randperm(32_000, generator=g)[:n_ov]
        vectors, has = clustered(n_t, a.aux_dim, g), torch.rand(n_t, generator=g) < a.vector_rate
        t0 = time.perf_counter()
        rows = read_embedding_rows(source)  # the two matrices, not the model
        dtype, (source_matrix, rows) = rows.input.dtype, (rows.matrix(), rows.layout())  # as init.initialize
        matrix, kind, _ = focus_init(source_matrix, n_t, ov_t, ov_s, vectors, has, seed=0,
                                     screen_dtype=torch.bfloat16)
        write_tensors(rows.split(matrix), init,
                      metadata={"method": json.dumps({"kind": "focus"}), "seed": "0"})
        detail = f"overlap {n_ov:,}, combined {(kind == 1).sum().item():,}, rows in {dtype}"
    elif a.case == "export":
        from vocab_transfer.export import export_init

        export_init(str(source), str(init), str(tokenizer), str(work / "export"), "card")
        linked = sum(os.stat(f).st_nlink > 1 for f in (work / "export").glob("*.safetensors"))
        detail = f"{linked} of {len(list(source.glob('*.safetensors')))} shards linked"
    elif a.case == "hf":
        from safetensors.torch import load_file
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.bfloat16)
        new = load_file(init)
        model.resize_token_embeddings(new["embeddings"].shape[0], mean_resizing=False)
        with torch.no_grad():
            model.get_input_embeddings().weight.copy_(new["embeddings"])
            model.get_output_embeddings().weight.copy_(new["output_embeddings"])
        model.save_pretrained(work / "hf")
        detail = "from_pretrained + resize + rows + save_pretrained"
    else:
        raise ValueError(a.case)
    return {"case": a.case, "seconds": round(time.perf_counter() - t0, 2), "detail": detail}


def same_tensors(a, names: list[str]) -> bool:
    """Whether the export and the HF path wrote the same ``names`` (read from their shards by the index)."""
    from safetensors import safe_open

    def read(folder: Path, name: str):
        index = folder / "model.safetensors.index.json"
        file = json.loads(index.read_text())["weight_map"][name] if index.exists() else "model.safetensors"
        with safe_open(folder / file, "pt") as f:
            return f.get_tensor(name)

    work = Path(a.workdir)
    return all(read(work / "export", n).equal(read(work / "hf", n)) for n in names)


def spawn(args: list[str]) -> tuple[str, float, float]:
    """Run ``args``; its stdout, wall seconds and peak RSS (GiB, from wait4: that process alone)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall, proc.returncode = time.perf_counter() - t0, os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        if proc.returncode:
            raise SystemExit(f"{args}: {err.read()}")
        return out.read(), wall, usage.ru_maxrss / 2**20


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=8,
                   help="of Mistral-7B's 32 (disk: 0.44 GB per layer + 0.52 GB)")
    p.add_argument("--shard-gb", type=float, default=1.5,
                   help="largest shard (Mistral-7B's are 5 GB of 32 layers)")
    p.add_argument("--target", type=int, default=32_768, help="target vocabulary")
    p.add_argument("--overlap", type=float, default=0.5, help="share of target tokens that are source tokens")
    p.add_argument("--vector-rate", type=float, default=0.76,
                   help="share of target tokens with a fastText vector")
    p.add_argument("--aux-dim", type=int, default=300)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    p.add_argument("--workdir", default=str(OUT / "llm_transfer"))
    p.add_argument("--keep", action="store_true", help="keep the checkpoint and the outputs")
    p.add_argument("--case", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.case:  # child process: one case
        print(json.dumps(run_case(a)))
        return
    work = Path(a.workdir)
    shutil.rmtree(work, ignore_errors=True)
    args = [f"--{k.replace('_', '-')}={v}" for k, v in vars(a).items() if k not in ("cases", "case", "keep")]
    rows = []
    try:  # every case in a child, so that none inherits another's memory (this process stays small)
        out, wall, _ = spawn([sys.executable, __file__, "--case", "write", *args])
        print(f"checkpoint: {json.loads(out.strip().splitlines()[-1])['detail']}, written in {wall:.0f} s",
              flush=True)
        shards = sorted(work.glob("source/*.safetensors"))
        gb = sum(f.stat().st_size for f in shards) / 1e9
        for case in a.cases:
            if case == "cp":
                (work / "cp").mkdir()
                _, wall, peak = spawn(["cp", *map(str, shards), str(work / "cp")])
                rows.append({"case": "cp", "seconds": round(wall, 2),
                             "detail": f"cp of the {len(shards)} shards"})
                shutil.rmtree(work / "cp")
            else:
                out, wall, peak = spawn([sys.executable, __file__, "--case", case, *args])
                rows.append(json.loads(out.strip().splitlines()[-1]))
            rows[-1] |= {"process_seconds": round(wall, 2), "peak_rss_gib": round(peak, 2)}
            print(rows[-1], flush=True)
        if {"export", "hf"} <= set(a.cases):
            layer = "model.layers.0.mlp.down_proj.weight"
            print("export == HF path:",
                  same_tensors(a, ["model.embed_tokens.weight", "lm_head.weight", layer]))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    import pandas as pd

    df = pd.DataFrame(rows)
    df.insert(1, "scale", f"Mistral-7B shape, {a.layers} layers, {gb:.2f} GB bf16 in {len(shards)} shards, "
                          f"target {a.target:,}, {a.threads} threads")
    OUT.mkdir(exist_ok=True)
    df.to_csv(OUT / "llm_transfer.csv", index=False)
    (OUT / "llm_transfer.md").write_text(f"{platform.node()}, {os.cpu_count()} CPUs, "
                                         f"{time.strftime('%Y-%m-%d')}: `{' '.join(sys.argv)}`\n\n"
                                         + df.to_markdown(index=False) + "\n")
    print(df.to_markdown(index=False))
    by = {r["case"]: r for r in rows}
    if "focus" in by:
        print(f"init ≤ 60 s: {by['focus']['seconds'] <= 60}; peak RSS ≤ 3 GB: "
              f"{by['focus']['peak_rss_gib'] * 2**30 / 1e9 <= 3}")
    if {"export", "cp"} <= set(by):
        print(f"export ≤ 2× cp: {by['export']['seconds'] <= 2 * by['cp']['seconds']}; peak RSS ≤ 3 GB: "
              f"{by['export']['peak_rss_gib'] * 2**30 / 1e9 <= 3}")


if __name__ == "__main__":
    main()
