"""Dry runs of the paper-scale configs (configs/*.yaml): each must plan offline, touch no network while the
DAG is built, write nothing but .snakemake/, and plan its paper's experiment grid.

The expected job counts are literals derived from the papers' tables (the papers are cited in README.md), not from
the configs, so a config that drifts from its paper fails here. Where the pipeline cannot express a paper's grid
exactly, the surplus is a separate, commented term (see each config's header).

The same dry runs check every job count and grid size that README.md and docs/*.md quote (DOC_COUNTS).
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
import yaml
from conftest import planned_job_counts

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]

# Every socket a dry run opens to reach another host fails and leaves a line in NETGUARD_LOG: the DAG must be
# built from the config alone (hub models, corpora, task data and vectors are downloaded by jobs, later).
NETGUARD = textwrap.dedent("""
    import os, socket

    def _refuse(what, args):
        with open(os.environ["NETGUARD_LOG"], "a") as log:
            log.write(f"{what}{args!r}\\n")
        raise OSError(f"network access during a dry run: {what}{args!r}")

    _connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex

    def connect(self, address):
        if self.family == socket.AF_UNIX:
            return _connect(self, address)
        _refuse("connect", (address,))

    def connect_ex(self, address):
        if self.family == socket.AF_UNIX:
            return _connect_ex(self, address)
        _refuse("connect_ex", (address,))

    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
    socket.getaddrinfo = lambda *a, **k: _refuse("getaddrinfo", a)
    socket.create_connection = lambda *a, **k: _refuse("create_connection", a)
""")

# config -> {rule: planned jobs}, from the papers. "forced": jobs the pipeline adds beyond the paper's grid.
GRIDS = {
    "focus": {  # the FOCUS paper
        # Table 4: one job per language evaluates every initialization of that language.
        "evaluate_init": 10,
        # Table 4 cells: Random, FOCUS, Symbolic Overlap on all 10 languages (30); Word-fastText and WECHSEL on the
        # 6 with cc.<lang>.300 vectors (12) = 42. Tables 2/3 inits not in Table 4: WECHSEL_EN on de, ar, sw (3);
        # extended vocab Random and FOCUS, and the original vocabulary, on de, ar, sw, ha, xh (15) = 18. The added
        # rows (not in the paper) on all 10 languages: FVT, CLP, OMP, extension with mean-resized rows (40), and
        # extended FOCUS as a Table 4 row also on the 5 languages without LAPT (gd, lb, ceb, sm, hmn); WECHSEL on
        # normalized vectors on the 6 with word vectors.
        "init_embeddings": 42 + 18 + 4 * 10 + 5 + 6,
        # Tables 2/3 "+ LAPT" rows: 7 on de, ar, sw (original vocab, Random 2-stage, WECHSEL_EN, WECHSEL, FOCUS,
        # extended Random, extended FOCUS) = 21; 5 on ha, xh (no WECHSEL rows, "—‡") = 10.
        "train_lapt": 21 + 10,
        # Tables 2/3 cells: Table 2 6 columns x 8 rows = 48; Table 3 WikiANN 3 x 8 = 24, GermEval14/MasakhaNER de,
        # sw 2 x 8 = 16 and ha, xh 2 x 6 = 12; 100 cells, one job each for its 5 seeds (App. A; seeds_per_job unset).
        "finetune": 100,
        "prepare_task": 13,  # 3 XNLI + 3 QA (GermanQuAD, TyDiQA ar, sw) + 3 WikiANN + GermEval14 + 3 MasakhaNER
        "plot_lapt_curves": 5,  # Figure 2 per LAPT language (de, ar, sw, ha, xh)
        "plot_embedding_correlation": 5,  # vocab-swap Figures 2/5 per LAPT language
        "prepare_corpus": 10 + 1,  # Table 4's languages + English for WECHSEL_EN's English tokenizer (§3.1)
        "download_source_model": 1,  # XLM-R base (§3)
        "make_paper_table": 2 + 3,  # Tables 2 and 3 in the paper's layout; Tables 1, 7, 8 (corpora, overlap)
    },
    "wechsel": {  # the WECHSEL paper, RoBERTa: Table 1
        "evaluate_init": 4,  # fr, de, zh, sw (not a table of the paper: init-time MLM loss of both inits)
        # WECHSEL, TransInner per language (Score@0 fine-tunes them directly); FullRand's random embeddings; WECHSEL on
        # normalized vectors (not in the paper, init-time loss only); App. A Table 7: 4 more (k, tau) pairs on fr, de,
        # zh; App. D Table 8: the 5 pairs with fastText subwords
        "init_embeddings": 4 * 4 + 3 * 4 + 3 * 5,
        # Tables 7-8's NLI and POS columns: linear probes of 11 inits (the two grids, TransInner) on fr, de, zh
        "probe_init": 11 * 3 * 2,
        "save_word_fasttext_model": 4,  # Table 8: the cc.<lang>.300.bin models of en, fr, de, zh
        # WECHSEL, TransInner, FullRand (reinit: all): one 250k-step run each (Score@250k), Score@25k (and FullRand's
        # Score@0) fine-tune its snapshots.
        "train_lapt": 4 * 3,
        # Table 1: 4 languages x 2 tasks (XNLI, WikiANN) x 3 methods x 3 checkpoints (@0, @25k, @250k) x 3 runs;
        # "Score (more training)": CamemBERT, GBERT, BERT-Chinese on their language's 2 tasks, XLM-R on all 8.
        # Figure 3: the 3 runs' snapshots at 50k, 100k, 150k, 200k on the same 8 tasks; one job per cell, 3 seeds
        "finetune": 4 * 2 * 3 * 3 + (3 * 2 + 8) + 3 * 4 * 8,
        "plot_lapt_finetune": 8,  # Figure 3, RoBERTa: NLI and NER panels per language
        "download_reference_model": 4,
        "make_paper_table": 4,  # Table 1; Table 6 (target tokens and their closest English token); Tables 7-8
        "prepare_task": 4 * 2 + 3,  # XNLI and WikiANN per language; UD GSD POS (probes) on fr, de, zh
        "plot_lapt_curves": 4,  # Figure 3
        "plot_embedding_correlation": 4,  # vocab-swap Figures 2/5 per LAPT language
        "download_source_model": 1,
    },
    "wechsel_gpt2": {  # the WECHSEL paper, GPT-2: Table 2 (PPL@0/@25k/@250k read off one 250k-step curve)
        "evaluate_init": 4,
        # + App. A Table 7: 4 more (k, tau) pairs on fr, de, zh; App. D Table 8: the 5 pairs with fastText subwords
        "init_embeddings": 4 * 3 + 3 * 4 + 3 * 5,
        "save_word_fasttext_model": 4,  # Table 8: the cc.<lang>.300.bin models of en, fr, de, zh
        # WECHSEL-GPT2, TransInner-GPT2, FullRand-GPT2 (reinit: all) per language; Figure 4: 4 German 75k-step runs;
        # Figures 5-6: WECHSEL (fr, de, zh) and TransInner (fr, zh) with the body frozen
        "train_lapt": 4 * 3 + 4 + 3 + 2,
        "plot_figure": 4,  # Figure 3 (GPT-2 panels), Figures 4, 5, 6
        "plot_lapt_curves": 4,
        "plot_embedding_correlation": 4,  # vocab-swap Figures 2/5 per LAPT language
        "download_source_model": 1,
        "make_paper_table": 3,  # Table 2 (perplexity at 0, 25k, 250k steps), Tables 7 and 8 (k x tau at initialization)
    },
    "unks": {  # the UNKs Everywhere paper: zero-shot transfer (§4.3), Tables 3a/3b, per source language 5a-d/9a-d
        "evaluate_init": 17,  # not a table of the paper: init-time MLM loss of the 8 inits
        # Tables 3a, 3b (averaged over the 4 source languages), 5a-d (NER), 9a-d (DP), one per source language
        # plus Table 8 (100 vs 300 dimensions) and Tables 1, 6, 7 (vocabularies)
        "make_paper_table": 2 + 4 + 4 + 1 + 3,
        "init_embeddings": 17 * 9,  # EL-RAND/-LEX, MF1-RAND/-LEX, MF10 KMEANS/NEURAL -RAND/-LEX (FMT reuses EL's)
        # §3.3: mBERT's matrix factorized once per MF variant (MF1, MF10-KMEANS, MF10-NEURAL; Table 8's MF10-KMEANS
        # with D' = 300)
        "factorize_source": 4,
        "train_tokenizer": 17,  # §4.3: a new tokenizer per target language, none for the source languages
        # §4.3: one MAD-X 2.0 language adapter + embeddings per language and new-vocabulary row (17 x 8); App. A.1:
        # embeddings with the transformer frozen for FMT-RANDINIT/-LEXINIT (17 x 2); §4.1: MAD-X and MAD-X 2.0
        # language adapters with mBERT's vocabulary on the 17 targets (rows) and the 4 source languages (the
        # adapters task adapters stack on; AdapterHub's in the paper) ((17 + 4) x 2); Tables 5a-d "12Ad ✓": the 8
        # methods with a 12th-layer adapter (17 x 8); Table 8: MF10-KMEANS-LEX with D' = 300 (17); Figure 3: EL-LEX
        # and MF10-KMEANS-LEX on 1k, 10k, 100k sequences (17 x 6)
        "train_lapt": 17 * 8 + 17 * 2 + (17 + 4) * 2 + 17 * 8 + 17 + 17 * 6,
        # task training on the source side, once per source task, setup and seed (5 runs, Table 3 caption):
        # NER on en/ar/zh/ja x {mBERT full, MAD-X, MAD-X 2.0, FMT} (Tables 5a-d rows); DP x {mBERT, MAD-X 2.0}
        # (Tables 9a-d rows)
        "train_source_task": 4 * 4 * 5 + 4 * 2 * 5,
        # one job per zero-shot cell, evaluating its 5 seeds x 4 source trainings: Tables 3a/5a-d 17 languages x 21
        # rows (mBERT, MAD-X, MAD-X 2.0, FMT x 2, 8 methods, their 8 "12Ad ✓" rows), Table 8's 300-dimensional row
        # (17); Table 3b/9a-d 6 languages (hi, ur, bh, myv, wo, am) x 10 rows (mBERT, MAD-X 2.0, 8 methods)
        "evaluate_zero_shot": 17 * 21 + 17 + 17 * 6 + 6 * 10,  # + Figure 3's 6 rows
        # the list of source-side trainings a zero-shot task's cells read, per task and setup: NER x {mBERT full,
        # MAD-X, MAD-X 2.0, FMT}, DP x {mBERT, MAD-X 2.0}
        "list_source_trainings": 17 * 4 + 6 * 2,
        "prepare_task": 17 + 6 + 4 + 4,  # target test sets (WikiANN, UD) + source tasks (WikiANN, UD of en/ar/zh/ja)
        "prepare_corpus": 17 + 4,  # the targets' and the source languages' Wikipedia
        "plot_lapt_curves": 17 + 4,
        "plot_embedding_correlation": 17,  # vocab-swap Figures 2/5 per language with a new vocabulary
        "plot_figure": 2,  # Figure 2 (mBERT's zero-shot NER F1 against the UNK share), Figure 3 (sample efficiency)
        "download_source_model": 1,
    },
    "vocab_swap": {  # the vocab-swap paper, Experiment 3: Tables 11-13 (fr) and 14-16 (de)
        "evaluate_init": 2,
        "make_paper_table": 6,  # Tables 11, 14 (MLM loss), 12, 15 (XNLI), 13, 16 (PAWS-X) in the paper's layout
        "init_embeddings": 2 * 4,  # Embed Reinit, Freq, Align, Dict Match
        # Tables 11/14 cells per language: Reinit, Align, Dict x (Embed 1e-4, 5e-4, All 5e-5, 1e-4) + Freq x
        # (All 5e-5, 1e-4) + Scratch x (All 1e-4) = 15.
        "train_lapt": 2 * 15,
        # Tables 12/15 (XNLI), 13/16 (PAWS-X): the same 15 cells, 5 seeds; Figures 4 (de) and 8 (fr): XNLI "at five
        # different points" of each run, the last being the final model above, so 4 snapshots x 5 runs (Scratch,
        # Reinit, Freq, Align, Dict Match; All Layers 1e-4, the column with Scratch) x 5 seeds per language.
        # Reference rows ("Best" only, 5 seeds): mBERT on all four tasks, German BERT on the German and FlauBERT on
        # the French ones. One job per cell, for its 5 seeds.
        "finetune": 2 * 2 * 15 + 2 * 4 * 5 + (4 + 2 + 2),
        "download_reference_model": 3,  # mBERT, German BERT, FlauBERT
        "prepare_task": 2 * 2,
        "plot_lapt_curves": 2,
        "plot_embedding_correlation": 2,  # vocab-swap Figures 2/5 per LAPT language
        "plot_lapt_finetune": 2,  # Figures 4 (German) and 8 (French)
        "plot_token_accuracy": 1,  # Figure 6 (Dict Match's matched vs not matched tokens; French, as Figure 5)
        "download_source_model": 1,
    },
    "vocab_swap_recovery": {  # the vocab-swap paper, Experiment 1: Tables 1, 4-8
        "evaluate_init": 1,
        "init_embeddings": 6 + 1,  # Reinit Embed, 75/50/25% Kept, Permute, Permute 100; Bert Baseline (its own rows)
        # Table 8: the 6 perturbations x (Embed Layers 1e-4, 5e-4, All Layers 5e-5, 1e-4, Word Embed Only 1e-4,
        # 5e-4) = 36, Scratch x All Layers (5e-5, 1e-4) = 2. Tables 1/4/5/7 add Scratch x Embed Layers (1e-4, 5e-4)
        # = 2, and Tables 1, 4-7 the Bert Baseline x (All Layers 1e-4, 5e-5, Embed Layers 1e-4, 5e-4) = 4.
        "train_lapt": 6 * 6 + 2 + 2 + 4,
        # Tables 4 (MRPC) and 5 (STS-B): 8 rows (Bert Baseline, Scratch, Reinit Embed, 25/50/75% Kept, Permute,
        # Permute 100) x 4 columns (All Layers 1e-4, 5e-5, Embed Layers 1e-4, 5e-4); MNLI: the same 8 rows x Embed
        # Layers (Tables 1/7) and x All Layers (Table 6). 32 models x 3 tasks, a job each for its 5 seeds ("average
        # over five seeds").
        "finetune": 8 * 4 * 3,
        "prepare_task": 3,  # GLUE MNLI, MRPC, STS-B (§3.1)
        "plot_lapt_curves": 1,
        "plot_embedding_correlation": 1,  # Figures 2/7 (recovery curves) and pairwise ρ̄
        "make_paper_table": 6,  # Tables 1, 4, 5, 6, 7 (= Table 1, appendix), 8 in the paper's layout
        "download_source_model": 1,
    },
    "vocab_swap_frankenberta": {  # the vocab-swap paper, Experiment 2: Tables 2 and 9
        "evaluate_init": 1,
        "init_embeddings": 3,  # Reinit Embed, Freq Match, Dict Match (Align Match omitted, §3.2 fn. 3)
        "train_lapt": 3 * 2,  # Embed Grad 5e-4, All Grad 1e-4
        "train_tokenizer": 1,  # bert-base-uncased's, fetched (not trained) by the job
        # Table 2: the 6 swapped models + bert-base-uncased and roberta-base "Pre-trained" x STS-B, MRPC, MNLI x 5
        # seeds ("average results over five seeds"), one job per cell
        "finetune": (6 + 2) * 3,
        "prepare_task": 3,
        "download_reference_model": 1,  # bert-base-uncased (roberta-base is the source)
        "plot_lapt_curves": 1,
        "plot_embedding_correlation": 1,
        "make_paper_table": 2,  # Tables 9 and 2
        "download_source_model": 1,
    },
    "vocab_swap_frankenbert": {  # the vocab-swap paper, Table 10 (Experiment 2 reversed: BERT with RoBERTa's tokenizer)
        "evaluate_init": 1,
        "init_embeddings": 3,  # Table 10 rows: Dict Match, Freq Match, Reinit Embed
        "train_lapt": 3 * 2,  # LR 1e-4 (All), LR 5e-4 (Embed)
        "train_tokenizer": 1,  # roberta-base's, fetched
        "finetune": (6 + 2) * 3,  # 6 swapped + bert-base-uncased, roberta-base "Pre-trained" x 3 tasks (5 seeds a job)
        "prepare_task": 3,
        "download_reference_model": 1,  # roberta-base (bert-base-uncased is the source)
        "plot_lapt_curves": 1,
        "plot_embedding_correlation": 1,
        "make_paper_table": 1,  # Table 10
        "download_source_model": 1,
    },
    "llm_mistral": {  # FOCUS's follow-up study: Mistral-7B to de, ar (configs/llm_mistral.yaml header)
        "evaluate_init": 2,
        "init_embeddings": 2 * 2,  # FOCUS and Random per language
        # {FOCUS, original vocabulary} x {pure, mixed bf16} per language; embeddings first (pure bf16) on ar
        "train_lapt": 2 * 2 * 2 + 1,
        "train_tokenizer": 2,  # 32k per language
        "tokenize_source_corpus": 2 * 2,  # the original-vocabulary runs read Mistral-tokenized shards
        "plot_lapt_curves": 2,
        "download_source_model": 1,
    },
}
NO_JOBS = {  # rules a config must not plan
    "focus": ["pretrain_source_model", "download_reference_model"],
    "wechsel": ["pretrain_source_model", "train_fasttext"],
    "wechsel_gpt2": ["pretrain_source_model", "finetune", "make_finetune_table"],
    "unks": ["pretrain_source_model", "finetune", "download_reference_model"],  # every cell is zero-shot (§4.3)
    "vocab_swap": ["pretrain_source_model"],
    "vocab_swap_recovery": ["pretrain_source_model", "train_fasttext", "download_reference_model"],
    "vocab_swap_frankenberta": ["pretrain_source_model"],
    "vocab_swap_frankenbert": ["pretrain_source_model"],
    "llm_mistral": ["pretrain_source_model", "finetune", "download_reference_model"],
}


# Plans beyond the paper grids, for the job counts the docs quote: the demo, and docs/cluster.md's worked example
# (German FOCUS up to its exported model). name -> (config, targets).
MORE_PLANS = {
    "demo": ("config.yaml", []),
    "focus-de": ("configs/focus.yaml", ["results/focus/export/xlmr/de/lapt/focus"]),
    "papers": ("configs/papers.yaml", []),
    "rehearsal": (("configs/papers.yaml", "configs/overlays/rehearsal.yaml"), []),  # scripts/rehearse.sh
    "rehearsal-focus": (("configs/focus.yaml", "configs/overlays/rehearsal.yaml"), []),
    # tests/test_slurm.py: a table of each paper through SLURM
    "rehearsal-ci": (("configs/papers.yaml", "configs/overlays/rehearsal.yaml", "tests/data/rehearsal_ci.yaml"),
                     ["results/focus/tables/paper/focus_table1.md", "results/wechsel/tables/paper/wechsel_table6.md",
                      "results/unks/tables/paper/unks_table7.md",
                      "results/vocab_swap_frankenberta/tables/paper/vocab_swap_table9.md"]),
}
COMPOSITES = {"papers"}  # configs/*.yaml that name studies rather than being one

# Plans every config in ONE Python process (snakemake's CLI called once per config, each in its own working
# directory, its output redirected at the file-descriptor level): the imports (snakemake, torch, datasets) cost
# about 7 s of CPU, each DAG 1-2 s, so separate processes would take three times as long on 2 cores. Without
# `--quiet rules` the output lists every job with its wildcards (planned_jobs).
RUNNER = textwrap.dedent("""
    import json, os, sys, traceback
    from snakemake.cli import main

    snakefile, specs = sys.argv[1], json.loads(sys.argv[2])
    codes = {}
    for name, workdir, configs, output, targets in specs:
        os.chdir(workdir)
        os.environ["NETGUARD_LOG"] = output + ".network"  # read by the guard at each refused connection
        sys.stdout.flush(); sys.stderr.flush()
        fd, saved = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), (os.dup(1), os.dup(2))
        os.dup2(fd, 1); os.dup2(fd, 2)
        try:
            main(["--snakefile", snakefile, "-n", "--cores", "1", *targets, "--configfile", *configs])
            codes[name] = 0
        except SystemExit as e:
            codes[name] = e.code if isinstance(e.code, int) else 1
        except Exception:
            traceback.print_exc()
            codes[name] = 1
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved[0], 1); os.dup2(saved[1], 2); os.close(fd)
    print(json.dumps(codes))
""")


def planned_jobs(output: str) -> list[tuple[str, dict[str, str]]]:
    """(rule, wildcards) of every job a dry run lists."""
    jobs = []
    for line in output.splitlines():
        if match := re.fullmatch(r"(?:local)?rule (\w+):", line):
            jobs.append((match.group(1), {}))
        elif jobs and (match := re.fullmatch(r"    wildcards: (.*)", line)):
            jobs[-1][1].update(pair.split("=", 1) for pair in match.group(1).split(", "))
    return jobs


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory):
    """Every paper config (and MORE_PLANS) planned offline (``snakemake -n``), under the network guard, each in an
    empty working directory: {name: returncode, output, jobs (per rule), planned (every job: rule, wildcards),
    network (refused connections), files (left behind)}."""
    root = tmp_path_factory.mktemp("paper-configs")
    (root / "guard").mkdir()
    (root / "guard" / "sitecustomize.py").write_text(NETGUARD)
    plans = {**{name: (f"configs/{name}.yaml", []) for name in GRIDS}, **MORE_PLANS}
    specs = []
    for name, (config, targets) in plans.items():
        (root / name).mkdir()
        configs = [str(REPO / c) for c in ((config,) if isinstance(config, str) else config)]
        specs.append([name, str(root / name), configs, str(root / f"{name}.out"), targets])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NETGUARD_LOG": str(root / "network.log"),
           "PYTHONPATH": os.pathsep.join([str(root / "guard"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(REPO / "Snakefile"), json.dumps(specs)],
                          capture_output=True, text=True, env=env, cwd=root)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    codes = json.loads(proc.stdout.strip().splitlines()[-1])
    results = {}
    for name in plans:
        output, network = root / f"{name}.out", root / f"{name}.out.network"
        results[name] = {"returncode": codes[name], "output": output.read_text(),
                         "jobs": planned_job_counts(output.read_text()), "planned": planned_jobs(output.read_text()),
                         "network": network.read_text() if network.exists() else "",
                         "files": sorted(os.listdir(root / name))}
    # anything refused before the first config's run (imports) is logged under network.log
    assert not (root / "network.log").exists(), (root / "network.log").read_text()
    return results


def test_every_paper_config_is_covered():
    assert sorted(p.stem for p in CONFIGS.glob("*.yaml")) == sorted([*GRIDS, *COMPOSITES])
    assert sorted(yaml.safe_load((CONFIGS / "papers.yaml").read_text())["studies"]) == sorted(f"configs/{n}.yaml" for n in GRIDS)


def planned_outputs(output: str) -> list[tuple[str, str]]:
    """(rule, outputs) of every job a dry run lists that writes something (the `all` rules write nothing)."""
    jobs, rule = [], None
    for line in output.splitlines():
        if match := re.fullmatch(r"(?:local)?rule (\w+):", line):
            rule = match.group(1)
        elif rule and (match := re.fullmatch(r"    output: (.*)", line)):
            jobs.append((rule, match.group(1)))
    return jobs


@pytest.mark.slow
def test_the_composite_plans_each_paper_as_alone_and_shares_the_rest(dry_runs):
    """configs/papers.yaml plans exactly the jobs of the paper configs run alone (rule and outputs), each once: a
    paper's own jobs under its study's rule names, what papers share by name (corpora, downloads, task data, word
    vectors, dictionaries) by one job. The saving is the count docs/cluster.md quotes."""
    composite = dry_runs["papers"]
    assert composite["returncode"] == 0, composite["output"][-5000:]
    assert composite["network"] == "" and composite["files"] == [".snakemake"]
    studies = sorted(GRIDS, key=len, reverse=True)  # vocab_swap_frankenbert before vocab_swap

    def base(rule):
        return next((rule[len(s) + 1:] for s in studies if rule.startswith(f"{s}_")), rule)

    together = Counter((base(rule), out) for rule, out in planned_outputs(composite["output"]))
    alone = {name: set(planned_outputs(dry_runs[name]["output"])) for name in GRIDS}
    assert max(together.values()) == 1  # no output planned twice
    assert set(together) == set().union(*alone.values())
    separately = sum(len(jobs) for jobs in alone.values())
    shared = separately - len(together)
    assert shared == SHARED_JOBS, shared
    # what two papers plan alike is a shared artifact (corpus, download, task data, vectors, dictionary)
    twice = {out for rule, out in together if sum((rule, out) in jobs for jobs in alone.values()) > 1}
    assert all(out.startswith(("results/corpus/", "resources/", "results/tasks/", "results/word_vectors/",
                               "results/dictionaries/", "results/source_shards/", "results/source/"))
               for out in twice), sorted(twice)[:5]


SHARED_JOBS = 67  # jobs the composite plans once that the separate paper configs plan twice or more


def test_network_guard_refuses_connections(tmp_path):
    """The guard the dry runs run under really stops a connection (so 'no network' below means something)."""
    (tmp_path / "sitecustomize.py").write_text(NETGUARD)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NETGUARD_LOG": str(tmp_path / "network.log")}
    code = "import urllib.request; urllib.request.urlopen('https://huggingface.co', timeout=5)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode != 0 and "network access during a dry run" in proc.stderr
    assert "huggingface.co" in (tmp_path / "network.log").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GRIDS))
def test_paper_config_plans_its_grid_offline(dry_runs, name):
    run = dry_runs[name]
    assert run["returncode"] == 0, run["output"][-5000:]
    assert run["network"] == "", f"{name}: network access while building the DAG:\n{run['network']}"
    assert run["files"] == [".snakemake"], f"{name}: the dry run wrote {run['files']}"
    jobs = run["jobs"]
    assert {rule: jobs.get(rule, 0) for rule in GRIDS[name]} == GRIDS[name]
    assert not [rule for rule in NO_JOBS[name] if rule in jobs], jobs
    assert jobs["all"] == 1


@pytest.mark.parametrize("name", list(GRIDS))
def test_paper_config_task_specs_are_valid(name):
    """Each task's dataset spec passes the loader's own checks and serves the task type the config names
    (check_config only checks that the loader exists)."""
    from vocab_transfer.data.tasks import LOADER_TASKS, check_spec

    config = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())
    for task_name, task in config.get("finetune", {}).get("tasks", {}).items():
        loader = check_spec(task["dataset"])
        assert task["task"] in LOADER_TASKS[loader], task_name


# --- the job counts and grid sizes that README.md and docs/*.md quote ------------------------------------------------
class Plan:
    """A dry run's jobs, counted the ways the docs count them."""

    def __init__(self, run: dict):
        assert run["returncode"] == 0, run["output"][-3000:]
        self.planned = run["planned"]

    def jobs(self, rule: str, **wildcards: str) -> list[dict[str, str]]:
        """The wildcards of the rule's jobs whose wildcards match the given regular expressions (whole values)."""
        return [w for r, w in self.planned
                if r == rule and all(re.fullmatch(pattern, w.get(k, "")) for k, pattern in wildcards.items())]

    def count(self, rule: str, **wildcards: str) -> int:
        return len(self.jobs(rule, **wildcards))

    def seeds(self, **wildcards: str) -> int:
        """Fine-tuning runs: a finetune job trains each seed its `seeds` wildcard names (1+2+3+4+5)."""
        return sum(len(w["seeds"].split("+")) for w in self.jobs("finetune", **wildcards))

    @property
    def total(self) -> int:
        return len(self.planned)

    @property
    def total_per_seed(self) -> int:
        """The jobs with a fine-tuning job per seed (`finetune.seeds_per_job: 1`)."""
        return self.total - self.count("finetune") + self.seeds()


def snapshot_grid(plan: Plan) -> tuple[int, ...]:
    """vocab_swap's Figures 4/8: snapshot steps x runs x languages x seeds, the fine-tunings and the snapshots kept."""
    jobs = plan.jobs("finetune", ftmodel=".*-snapshots-.*")
    runs = {w["ftmodel"].split("-snapshots-")[0] for w in jobs}
    steps = {w["ftmodel"].split("-snapshots-")[1] for w in jobs}
    languages = {w["task"].split("-")[0] for w in jobs}
    (seeds,) = {len(w["seeds"].split("+")) for w in jobs}
    kept = {(w["ftmodel"], w["task"].split("-")[0]) for w in jobs}
    return len(steps), len(runs), len(languages), seeds, plan.seeds(ftmodel=".*-snapshots-.*"), len(kept)


def demo_rules(p: Plan) -> dict[str, int]:
    """docs/benchmarks.md's table of the demo's job times."""
    rows = {"finetune": p.count("finetune"), "pretrain_source_model (2 threads)": p.count("pretrain_source_model"),
            "train_lapt": p.count("train_lapt"), "factorize_source": p.count("factorize_source"),
            "init_embeddings": p.count("init_embeddings"), "refine_embeddings": p.count("refine_embeddings"),
            "build_word_vectors": p.count("build_word_vectors"), "evaluate_init": p.count("evaluate_init"),
            "probe_init": p.count("probe_init"),
            "train_fasttext (+ presets, source)": sum(p.count(rule) for rule in
                                                      ("train_fasttext", "train_fasttext_preset",
                                                       "train_source_fasttext"))}
    return {**rows, "the other": p.total - sum(rows.values())}


def same(*values):
    """The value of several plans that a phrase quotes once for all of them ("each")."""
    assert len(set(values)) == 1, f"the plans differ: {values}"
    return values[0]


UNKS_TABLE3 = r"(?!.*_(12ad|300|1k|10k|100k)$).*"  # LAPT runs of Tables 3a-b (not 12Ad, Table 8, Figure 3)
SWAPPED = r"(scratch|reinit|freq|align|dict)-(all|embed)-[0-9e-]+"  # vocab_swap's final models (no snapshot)
PAPER_CONFIG_ROWS = ["focus", "llm_mistral", "unks", "vocab_swap", "vocab_swap_frankenbert",
                     "vocab_swap_frankenberta", "vocab_swap_recovery", "wechsel", "wechsel_gpt2"]

# (page, phrase as the page quotes it with {} for each number, the numbers from the plans). Whitespace and line
# breaks in the page do not matter; a phrase listed n times must occur n times.
DOC_COUNTS = [
    # docs/cluster.md: the worked example and the paper grids
    ("docs/cluster.md", "(source `xlmr`) to {} languages.", lambda p: p["focus"].count("evaluate_init")),
    ("docs/cluster.md", "German FOCUS, from CC100 German through LAPT to an exported model, is {} jobs:",
     lambda p: p["focus-de"].total),
    ("docs/cluster.md", "the {} German inits of the init-time table", lambda p: p["focus-de"].count("init_embeddings")),
    ("docs/cluster.md", "Table 4 ({} languages; {} inits with those of Tables 2/3), Tables 2/3 ({} LAPT runs, "
                        "{} fine-tunings)",
     lambda p: (p["focus"].count("evaluate_init"), p["focus"].count("init_embeddings"), p["focus"].count("train_lapt"),
                p["focus"].seeds())),
    ("docs/cluster.md", "Table 1 ({} LAPT runs: WECHSEL", lambda p: p["wechsel"].count("train_lapt")),
    ("docs/cluster.md", "{} fine-tunings incl. CamemBERT, GBERT, BERT-Chinese and XLM-R), Figure 3 ({} fine-tunings of "
                        "snapshots at 50k-200k)",
     lambda p: (p["wechsel"].seeds(ftmodel="(?!.*-steps-).*"), p["wechsel"].seeds(ftmodel=".*-steps-.*"))),
    ("docs/cluster.md", "Table 2 ({} CLM runs incl. FullRand;",
     lambda p: p["wechsel_gpt2"].count("train_lapt", run="wechsel|transinner|fullrand")),
    ("docs/cluster.md", "Figures 3-6 ({} more 75k-step runs)",
     lambda p: p["wechsel_gpt2"].count("train_lapt", run="(?!(wechsel|transinner|fullrand)$).*")),
    ("docs/cluster.md", "({} LAPT runs: {} for Tables 3a-b, {} for the 12Ad rows, {} for Table 8's 300-dimensional F, "
                        "{} for Figure 3's runs on less data; {} zero-shot cells of {} seeds each)",
     lambda p: (p["unks"].count("train_lapt"), p["unks"].count("train_lapt", run=UNKS_TABLE3),
                p["unks"].count("train_lapt", run=".*_12ad"), p["unks"].count("train_lapt", run=".*_300"),
                p["unks"].count("train_lapt", run=".*_(1k|10k|100k)"), p["unks"].count("evaluate_zero_shot"),
                len({w["seed"] for w in p["unks"].jobs("train_source_task")}))),
    ("docs/cluster.md", "Tables 11-16 ({} runs incl. Scratch, {} fine-tunings: XNLI and PAWS-X, plus {} of the mBERT, "
                        "German BERT and FlauBERT reference rows), Figures 4/8 ({} XNLI fine-tunings of LAPT snapshots)",
     lambda p: (p["vocab_swap"].count("train_lapt"), p["vocab_swap"].seeds(ftmodel=SWAPPED),
                p["vocab_swap"].seeds(ftmodel="mbert|german-bert|flaubert"),
                p["vocab_swap"].seeds(ftmodel=".*-snapshots-.*"))),
    ("docs/cluster.md", "Tables 1, 4-8 and Figures 2/7 ({} runs on BERT's own vocabulary, {} GLUE fine-tunings)",
     lambda p: (p["vocab_swap_recovery"].count("train_lapt"), p["vocab_swap_recovery"].seeds())),
    ("docs/cluster.md", "Tables 2 and 9 ({} runs: roberta-base with bert-base-uncased's tokenizer; {} GLUE fine-tunings",
     lambda p: (p["vocab_swap_frankenberta"].count("train_lapt"), p["vocab_swap_frankenberta"].seeds())),
    ("docs/cluster.md", "Table 10 ({} runs: bert-base-uncased with roberta-base's tokenizer; {} GLUE fine-tunings)",
     lambda p: (p["vocab_swap_frankenbert"].count("train_lapt"), p["vocab_swap_frankenbert"].seeds())),
    ("docs/cluster.md", "Arabic embeddings-first ({} LAPT runs of 1B tokens)",
     lambda p: p["llm_mistral"].count("train_lapt")),
    # docs/cluster.md: how the GPU budgets are derived
    ("docs/cluster.md", "≈ 0.4 h × {} runs; GermEval14 25 epochs ≈ 0.3 h × {})",
     lambda p: (p["focus"].seeds(task=".*-xnli"), p["focus"].seeds(task="de-germeval14"))),
    ("docs/cluster.md", "{} RoBERTa models (WECHSEL, TransInner, FullRand × {} languages)",
     lambda p: (p["wechsel"].count("train_lapt"), len({w["target"] for w in p["wechsel"].jobs("train_lapt")}))),
    ("docs/cluster.md", "≈ 35 h of fine-tuning ({} runs, XNLI dominating) and ≈ 40 h for Figure 3's {}. GPT-2: {} × 130 "
                        "= 1,560 h, plus Figures 4-6: {} runs of 75k steps ≤ {} × 39 h",
     lambda p: (p["wechsel"].seeds(ftmodel="(?!.*-steps-).*"), p["wechsel"].seeds(ftmodel=".*-steps-.*"),
                p["wechsel_gpt2"].count("train_lapt", run="wechsel|transinner|fullrand"),
                *[p["wechsel_gpt2"].count("train_lapt", run="(?!(wechsel|transinner|fullrand)$).*")] * 2)),
    ("docs/cluster.md", "→ {} runs ({} new-vocabulary, {} FMT embeddings, {} MAD-X / MAD-X 2.0 adapters on mBERT's "
                        "vocabulary incl. the {} source languages) ≈ 470–700 h; {} source-side trainings",
     lambda p: (p["unks"].count("train_lapt", run=UNKS_TABLE3),
                p["unks"].count("train_lapt", run="(el|mf1|mf10_kmeans|mf10_neural)_(lex|rand)"),
                p["unks"].count("train_lapt", run="fmt_.*"), p["unks"].count("train_lapt", run="madx2?"),
                len({w["srctask"].split("-")[0] for w in p["unks"].jobs("train_source_task")}),
                p["unks"].count("train_source_task"))),
    ("docs/cluster.md", "{} zero-shot jobs, one per (task, row) cell, each loading the target once and evaluating its "
                        "{} seeds × {} source trainings ({} test-set passes;",
     lambda p: (p["unks"].count("evaluate_zero_shot"), len({w["seed"] for w in p["unks"].jobs("train_source_task")}),
                len({w["srctask"].split("-")[0] for w in p["unks"].jobs("train_source_task")}),
                p["unks"].count("train_source_task", srctask=".*-ner", setup="madx2"))),
    ("docs/cluster.md", "`zero_shot.eval_runtime_min` × {} = 100 minutes",
     lambda p: p["unks"].count("train_source_task", srctask=".*-ner", setup="madx2")),
    ("docs/cluster.md", "cross-lingual run → {} runs ≈ 195 h, XNLI with HF defaults (3 epochs, batch 8) ≈ 0.6 h × {} "
                        "≈ 100 h, PAWS-X (49k pairs) ≈ 0.2 h × {} ≈ 35 h",
     lambda p: (p["vocab_swap"].count("train_lapt"),
                p["vocab_swap"].seeds(task=".*-xnli", ftmodel="(?!.*-snapshots-).*"),
                p["vocab_swap"].seeds(task=".*-pawsx"))),
    ("docs/cluster.md", "Figures 4/8 add {} snapshots × {} runs × {} languages × {} seeds of XNLI (0.6 h × {} ≈ 120 h) "
                        "and keep {} snapshots of bert-base",
     lambda p: snapshot_grid(p["vocab_swap"])),
    ("docs/cluster.md", "≈ 3.3 h × {} ≈ 145 h (an upper bound: {} of the runs freeze the body)",
     lambda p: (p["vocab_swap_recovery"].count("train_lapt"),
                p["vocab_swap_recovery"].count("train_lapt", run=".*_(embed|word)_.*"))),
    ("docs/cluster.md", "MNLI (393k pairs, as XNLI) ≈ 0.6 h × {} ≈ 95 h, MRPC and STS-B (3.7k, 5.7k pairs) ≈ 2 min "
                        "each × {} ≈ 10 h",
     lambda p: (p["vocab_swap_recovery"].seeds(task="mnli"), p["vocab_swap_recovery"].seeds(task="mrpc|stsb"))),
    ("docs/cluster.md", "FrankenBERTa and FrankenBERT each: {} × 3.3 h ≈ 20 h of LAPT, {} MNLI runs ≈ 24 h, {} small runs",
     lambda p: same(*[(p[name].count("train_lapt"), p[name].seeds(task="mnli"), p[name].seeds(task="mrpc|stsb"))
                      for name in ("vocab_swap_frankenberta", "vocab_swap_frankenbert")])),
    ("docs/cluster.md", "continues pretraining Mistral-7B (7.24B parameters) on German and Arabic: {} runs of",
     lambda p: p["llm_mistral"].count("train_lapt")),
    ("docs/cluster.md", "{} × 135 + 162 ≈ 1,240 A100-hours",
     lambda p: p["llm_mistral"].count("train_lapt", run="(?!.*two_stage).*")),
    ("docs/cluster.md", "A dry run plans {} jobs instead of {} for the nine configs one by one: {} shared artifacts",
     lambda p: (p["papers"].total, sum(p[name].total for name in GRIDS), SHARED_JOBS)),
    # docs/training.md
    ("docs/training.md", "a dry run of FOCUS's grid has {} jobs instead of {}",
     lambda p: (p["focus"].total, p["focus"].total_per_seed)),
    # docs/benchmarks.md: the demo
    ("docs/benchmarks.md", "minutes (1,716 s) for the demo's {} jobs on a 2-core AMD EPYC VM", lambda p: p["demo"].total),
    ("docs/benchmarks.md", "In the demo ({} jobs, 28.6 minutes from a fresh clone", lambda p: p["demo"].total),
    *[("docs/benchmarks.md", f"| {row} | {{}} |", lambda p, row=row: demo_rules(p["demo"])[row])
      for row in ("finetune", "pretrain_source_model (2 threads)", "train_lapt", "factorize_source", "init_embeddings",
                  "refine_embeddings", "build_word_vectors", "evaluate_init", "train_fasttext (+ presets, source)",
                  "probe_init")],
    ("docs/benchmarks.md", "| the other {} jobs | {} |", lambda p: (demo_rules(p["demo"])["the other"],) * 2),
    ("docs/benchmarks.md", "rerunning the demo's {} init jobs", lambda p: p["demo"].count("init_embeddings")),
    # docs/benchmarks.md: planning time (whole grids, and the floor table)
    ("docs/benchmarks.md", "| `config.yaml` (demo) | {} |", lambda p: p["demo"].total),
    ("docs/benchmarks.md", "| `config.yaml` (demo) | {} |", lambda p: p["demo"].total),
    *[("docs/benchmarks.md", f"| `configs/{name}.yaml` | {{}} |", lambda p, name=name: p[name].total)
      for name in PAPER_CONFIG_ROWS],
    *[("docs/benchmarks.md", f"| `configs/{name}.yaml` | {{}} |", lambda p, name=name: p[name].total)
      for name in PAPER_CONFIG_ROWS],
    ("docs/benchmarks.md", "| `configs/papers.yaml` (all nine, one DAG) | {} |", lambda p: p["papers"].total),
    # docs/cluster.md: the dress rehearsal (configs/overlays/rehearsal.yaml)
    ("docs/cluster.md", "the composite plans {} jobs with the overlay ({} without)",
     lambda p: (p["rehearsal"].total, p["papers"].total)),
    ("docs/cluster.md", "`bash scripts/rehearse.sh configs/focus.yaml`, is {} jobs", lambda p: p["rehearsal-focus"].total),
    ("docs/cluster.md", "every download on the login node, {} jobs", lambda p: p["rehearsal-ci"].total),
    ("docs/benchmarks.md", "instead of 19,650, for {} more jobs", lambda p: p["unks"].count("list_source_trainings")),
    ("docs/benchmarks.md", "With a fine-tuning job per seed, {} of focus's {} jobs and {} of wechsel's {} are "
                           "fine-tuning jobs",
     lambda p: (p["focus"].seeds(), p["focus"].total_per_seed, p["wechsel"].seeds(), p["wechsel"].total_per_seed)),
    ("docs/benchmarks.md", "its {} jobs are {} LAPT runs (each hours of GPU time), {} zero-shot cells (already one job "
                           "per cell for all seeds and source trainings), {} inits and {} source-side trainings",
     lambda p: (p["unks"].total, p["unks"].count("train_lapt"), p["unks"].count("evaluate_zero_shot"),
                p["unks"].count("init_embeddings"), p["unks"].count("train_source_task"))),
]
# Numbers of jobs and runs are quoted with these words; each such number in the docs must lie inside a DOC_COUNTS
# phrase, or be listed here with the reason it is no count of a plan.
COUNTED = r"\b\d[\d,]* (?:more )?(?:jobs|LAPT runs|CLM runs|fine-tunings|inits|zero-shot (?:cells|jobs))\b"
NOT_PLAN_COUNTS = {
    ("docs/architecture.md", "4 script jobs"): "the fewest jobs for which warm starts pay",
    ("docs/benchmarks.md", "253 jobs"): "a dry run's count with the shipped profile's bundles, not the plan's",
    ("docs/cluster.md", "12 jobs"): "one rehearsal run of a single target, not a plan's count",
}


def normalized(text: str) -> str:
    return " ".join(text.split())


def expected_phrases(dry_runs) -> dict[str, Counter]:
    """page -> {phrase with the planned numbers: how many times the page must contain it}."""
    plans = {name: Plan(run) for name, run in dry_runs.items()}
    phrases = {}
    for page, phrase, numbers in DOC_COUNTS:
        values = numbers(plans)
        values = values if isinstance(values, tuple) else (values,)
        assert phrase.count("{}") == len(values), phrase
        phrases.setdefault(page, Counter())[normalized(phrase.format(*(f"{v:,}" for v in values)))] += 1
    return phrases


@pytest.mark.slow
def test_doc_counts_are_the_planned_ones(dry_runs):
    """Every job count and grid size the docs quote equals the one the dry runs plan."""
    wrong = []
    for page, phrases in expected_phrases(dry_runs).items():
        text = normalized((REPO / page).read_text())
        for phrase, times in phrases.items():
            if text.count(phrase) < times:
                wrong.append(f"{page}: expected {times}x {phrase!r}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
def test_every_quoted_count_is_checked(dry_runs):
    """A job or run count in README.md or docs/*.md outside the phrases of DOC_COUNTS fails: add it there."""
    phrases = expected_phrases(dry_runs)
    for page, quoted in NOT_PLAN_COUNTS:
        assert quoted in normalized((REPO / page).read_text()), f"NOT_PLAN_COUNTS: {page} no longer says {quoted!r}"
    unchecked = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        page = path.relative_to(REPO).as_posix()
        text = normalized(path.read_text())
        covered = [(m.start(), m.end()) for phrase in phrases.get(page, ())
                   for m in re.finditer(re.escape(phrase), text)]
        for match in re.finditer(COUNTED, text):
            if (page, match.group(0)) in NOT_PLAN_COUNTS:
                continue
            if not any(start <= match.start() and match.end() <= end for start, end in covered):
                unchecked.append(f"{page}: {text[max(0, match.start() - 60):match.end() + 20]!r}")
    assert not unchecked, "\n".join(unchecked)
