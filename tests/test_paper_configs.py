"""Dry runs of the paper-scale configs (configs/*.yaml): each must plan offline, touch no network while the
DAG is built, write nothing but .snakemake/, and plan its paper's experiment grid.

The expected job counts are literals derived from the papers' tables (the papers are cited in README.md), not
from the configs, so a config that drifts from its paper fails here. Where the pipeline cannot express a
paper's grid exactly, the surplus is a separate, commented term (see each config's header).

The same dry runs check the job counts docs/cluster.md quotes (its block written by scripts/job_counts.py).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import job_counts  # noqa: E402

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
        # Table 4 cells: Random, FOCUS, Symbolic Overlap on all 10 languages (30); Word-fastText and WECHSEL
        # on the 6 with cc.<lang>.300 vectors (12) = 42. Tables 2/3 inits not in Table 4: WECHSEL_EN on de,
        # ar, sw (3); extended vocab Random and FOCUS, and the original vocabulary, on de, ar, sw, ha, xh (15)
        # = 18. The added rows (not in the paper) on all 10 languages: FVT, CLP, OMP, extension with
        # mean-resized rows (40), and extended FOCUS as a Table 4 row also on the 5 languages without LAPT
        # (gd, lb, ceb, sm, hmn); WECHSEL on normalized vectors on the 6 with word vectors.
        "init_embeddings": 42 + 18 + 4 * 10 + 5 + 6,
        # Tables 2/3 "+ LAPT" rows: 7 on de, ar, sw (original vocab, Random 2-stage, WECHSEL_EN, WECHSEL,
        # FOCUS, extended Random, extended FOCUS) = 21; 5 on ha, xh (no WECHSEL rows, "—‡") = 10.
        "train_lapt": 21 + 10,
        # Tables 2/3 cells: Table 2 6 columns x 8 rows = 48; Table 3 WikiANN 3 x 8 = 24, GermEval14/MasakhaNER
        # de, sw 2 x 8 = 16 and ha, xh 2 x 6 = 12; 100 cells, one job each for its 5 seeds (App. A;
        # seeds_per_job unset).
        "finetune": 100,
        # 3 XNLI + 3 QA (GermanQuAD, TyDiQA ar, sw) + 3 WikiANN + GermEval14 + 3 MasakhaNER
        "prepare_task": 13,
        "plot_lapt_curves": 5,  # Figure 2 per LAPT language (de, ar, sw, ha, xh)
        "plot_embedding_correlation": 5,  # vocab-swap Figures 2/5 per LAPT language
        "prepare_corpus": 10 + 1,  # Table 4's languages + English for WECHSEL_EN's English tokenizer (§3.1)
        "download_source_model": 1,  # XLM-R base (§3)
        "make_paper_table": 2 + 3,  # Tables 2 and 3 in the paper's layout; Tables 1, 7, 8 (corpora, overlap)
    },
    "wechsel": {  # the WECHSEL paper, RoBERTa: Table 1
        "evaluate_init": 4,  # fr, de, zh, sw (not a table of the paper: init-time MLM loss of both inits)
        # WECHSEL, TransInner per language (Score@0 fine-tunes them directly); FullRand's random embeddings;
        # WECHSEL on normalized vectors (not in the paper, init-time loss only); App. A Table 7: 4 more
        # (k, tau) pairs on fr, de, zh; App. D Table 8: the 5 pairs with fastText subwords
        "init_embeddings": 4 * 4 + 3 * 4 + 3 * 5,
        # Tables 7-8's NLI and POS columns: linear probes of 11 inits (the two grids, TransInner) on
        # fr, de, zh
        "probe_init": 11 * 3 * 2,
        "save_word_fasttext_model": 4,  # Table 8: the cc.<lang>.300.bin models of en, fr, de, zh
        # WECHSEL, TransInner, FullRand (reinit: all): one 250k-step run each (Score@250k), Score@25k (and
        # FullRand's Score@0) fine-tune its snapshots.
        "train_lapt": 4 * 3,
        # Table 1: 4 languages x 2 tasks (XNLI, WikiANN) x 3 methods x 3 checkpoints (@0, @25k, @250k) x 3
        # runs; "Score (more training)": CamemBERT, GBERT, BERT-Chinese on their language's 2 tasks, XLM-R on
        # all 8. Figure 3: the 3 runs' snapshots at 50k, 100k, 150k, 200k on the same 8 tasks; one job per
        # cell, 3 seeds
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
        # + App. A Table 7: 4 more (k, tau) pairs on fr, de, zh; App. D Table 8: the 5 pairs with fastText
        # subwords
        "init_embeddings": 4 * 3 + 3 * 4 + 3 * 5,
        "save_word_fasttext_model": 4,  # Table 8: the cc.<lang>.300.bin models of en, fr, de, zh
        # WECHSEL-GPT2, TransInner-GPT2, FullRand-GPT2 (reinit: all) per language; Figure 4: 4 German 75k-step
        # runs; Figures 5-6: WECHSEL (fr, de, zh) and TransInner (fr, zh) with the body frozen
        "train_lapt": 4 * 3 + 4 + 3 + 2,
        "plot_figure": 4,  # Figure 3 (GPT-2 panels), Figures 4, 5, 6
        "plot_lapt_curves": 4,
        "plot_embedding_correlation": 4,  # vocab-swap Figures 2/5 per LAPT language
        "download_source_model": 1,
        # Table 2 (perplexity at 0, 25k, 250k steps), Tables 7 and 8 (k x tau at initialization)
        "make_paper_table": 3,
    },
    # the UNKs Everywhere paper: zero-shot transfer (§4.3), Tables 3a/3b, per source language 5a-d/9a-d
    "unks": {
        "evaluate_init": 17,  # not a table of the paper: init-time MLM loss of the 8 inits
        # Tables 3a, 3b (averaged over the 4 source languages), 5a-d (NER), 9a-d (DP), one per source language
        # plus Table 8 (100 vs 300 dimensions) and Tables 1, 6, 7 (vocabularies)
        "make_paper_table": 2 + 4 + 4 + 1 + 3,
        # EL-RAND/-LEX, MF1-RAND/-LEX, MF10 KMEANS/NEURAL -RAND/-LEX (FMT reuses EL's)
        "init_embeddings": 17 * 9,
        # §3.3: mBERT's matrix factorized once per MF variant (MF1, MF10-KMEANS, MF10-NEURAL; Table 8's
        # MF10-KMEANS with D' = 300)
        "factorize_source": 4,
        "train_tokenizer": 17,  # §4.3: a new tokenizer per target language, none for the source languages
        # §4.3: one MAD-X 2.0 language adapter + embeddings per language and new-vocabulary row (17 x 8);
        # App. A.1: embeddings with the transformer frozen for FMT-RANDINIT/-LEXINIT (17 x 2); §4.1: MAD-X and
        # MAD-X 2.0 language adapters with mBERT's vocabulary on the 17 targets (rows) and the 4 source
        # languages (the adapters task adapters stack on; AdapterHub's in the paper) ((17 + 4) x 2); Tables
        # 5a-d "12Ad ✓": the 8 methods with a 12th-layer adapter (17 x 8); Table 8: MF10-KMEANS-LEX with
        # D' = 300 (17); Figure 3: EL-LEX and MF10-KMEANS-LEX on 1k, 10k, 100k sequences (17 x 6)
        "train_lapt": 17 * 8 + 17 * 2 + (17 + 4) * 2 + 17 * 8 + 17 + 17 * 6,
        # task training on the source side, once per source task, setup and seed (5 runs, Table 3 caption):
        # NER on en/ar/zh/ja x {mBERT full, MAD-X, MAD-X 2.0, FMT} (Tables 5a-d rows); DP x {mBERT, MAD-X 2.0}
        # (Tables 9a-d rows)
        "train_source_task": 4 * 4 * 5 + 4 * 2 * 5,
        # one job per zero-shot cell, evaluating its 5 seeds x 4 source trainings: Tables 3a/5a-d 17 languages
        # x 21 rows (mBERT, MAD-X, MAD-X 2.0, FMT x 2, 8 methods, their 8 "12Ad ✓" rows), Table 8's
        # 300-dimensional row (17); Table 3b/9a-d 6 languages (hi, ur, bh, myv, wo, am) x 10 rows (mBERT,
        # MAD-X 2.0, 8 methods)
        "evaluate_zero_shot": 17 * 21 + 17 + 17 * 6 + 6 * 10,  # + Figure 3's 6 rows
        # the list of source-side trainings a zero-shot task's cells read, per task and setup: NER x {mBERT
        # full, MAD-X, MAD-X 2.0, FMT}, DP x {mBERT, MAD-X 2.0}
        "list_source_trainings": 17 * 4 + 6 * 2,
        # target test sets (WikiANN, UD) + source tasks (WikiANN, UD of en/ar/zh/ja)
        "prepare_task": 17 + 6 + 4 + 4,
        "prepare_corpus": 17 + 4,  # the targets' and the source languages' Wikipedia
        "plot_lapt_curves": 17 + 4,
        "plot_embedding_correlation": 17,  # vocab-swap Figures 2/5 per language with a new vocabulary
        # Figure 2 (mBERT's zero-shot NER F1 against the UNK share), Figure 3 (sample efficiency)
        "plot_figure": 2,
        "download_source_model": 1,
    },
    "vocab_swap": {  # the vocab-swap paper, Experiment 3: Tables 11-13 (fr) and 14-16 (de)
        "evaluate_init": 2,
        # Tables 11, 14 (MLM loss), 12, 15 (XNLI), 13, 16 (PAWS-X) in the paper's layout
        "make_paper_table": 6,
        "init_embeddings": 2 * 4,  # Embed Reinit, Freq, Align, Dict Match
        # Tables 11/14 cells per language: Reinit, Align, Dict x (Embed 1e-4, 5e-4, All 5e-5, 1e-4) + Freq x
        # (All 5e-5, 1e-4) + Scratch x (All 1e-4) = 15.
        "train_lapt": 2 * 15,
        # Tables 12/15 (XNLI), 13/16 (PAWS-X): the same 15 cells, 5 seeds; Figures 4 (de) and 8 (fr): XNLI "at
        # five different points" of each run, the last being the final model above, so 4 snapshots x 5 runs
        # (Scratch, Reinit, Freq, Align, Dict Match; All Layers 1e-4, the column with Scratch) x 5 seeds per
        # language. Reference rows ("Best" only, 5 seeds): mBERT on all four tasks, German BERT on the German
        # and FlauBERT on the French ones. One job per cell, for its 5 seeds.
        "finetune": 2 * 2 * 15 + 2 * 4 * 5 + (4 + 2 + 2),
        "download_reference_model": 3,  # mBERT, German BERT, FlauBERT
        "prepare_task": 2 * 2,
        "plot_lapt_curves": 2,
        "plot_embedding_correlation": 2,  # vocab-swap Figures 2/5 per LAPT language
        "plot_lapt_finetune": 2,  # Figures 4 (German) and 8 (French)
        # Figure 6 (Dict Match's matched vs not matched tokens; French, as Figure 5)
        "plot_token_accuracy": 1,
        "download_source_model": 1,
    },
    "vocab_swap_recovery": {  # the vocab-swap paper, Experiment 1: Tables 1, 4-8
        "evaluate_init": 1,
        # Reinit Embed, 75/50/25% Kept, Permute, Permute 100; Bert Baseline (its own rows)
        "init_embeddings": 6 + 1,
        # Table 8: the 6 perturbations x (Embed Layers 1e-4, 5e-4, All Layers 5e-5, 1e-4, Word Embed Only
        # 1e-4, 5e-4) = 36, Scratch x All Layers (5e-5, 1e-4) = 2. Tables 1/4/5/7 add Scratch x Embed Layers
        # (1e-4, 5e-4) = 2, and Tables 1, 4-7 the Bert Baseline x (All Layers 1e-4, 5e-5, Embed Layers 1e-4,
        # 5e-4) = 4.
        "train_lapt": 6 * 6 + 2 + 2 + 4,
        # Tables 4 (MRPC) and 5 (STS-B): 8 rows (Bert Baseline, Scratch, Reinit Embed, 25/50/75% Kept,
        # Permute, Permute 100) x 4 columns (All Layers 1e-4, 5e-5, Embed Layers 1e-4, 5e-4); MNLI: the same 8
        # rows x Embed Layers (Tables 1/7) and x All Layers (Table 6). 32 models x 3 tasks, a job each for its
        # 5 seeds ("average over five seeds").
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
        # Table 2: the 6 swapped models + bert-base-uncased and roberta-base "Pre-trained" x STS-B, MRPC, MNLI
        # x 5 seeds ("average results over five seeds"), one job per cell
        "finetune": (6 + 2) * 3,
        "prepare_task": 3,
        "download_reference_model": 1,  # bert-base-uncased (roberta-base is the source)
        "plot_lapt_curves": 1,
        "plot_embedding_correlation": 1,
        "make_paper_table": 2,  # Tables 9 and 2
        "download_source_model": 1,
    },
    # the vocab-swap paper, Table 10 (Experiment 2 reversed: BERT with RoBERTa's tokenizer)
    "vocab_swap_frankenbert": {
        "evaluate_init": 1,
        "init_embeddings": 3,  # Table 10 rows: Dict Match, Freq Match, Reinit Embed
        "train_lapt": 3 * 2,  # LR 1e-4 (All), LR 5e-4 (Embed)
        "train_tokenizer": 1,  # roberta-base's, fetched
        # 6 swapped + bert-base-uncased, roberta-base "Pre-trained" x 3 tasks (5 seeds a job)
        "finetune": (6 + 2) * 3,
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
    # every cell is zero-shot (§4.3)
    "unks": ["pretrain_source_model", "finetune", "download_reference_model"],
    "vocab_swap": ["pretrain_source_model"],
    "vocab_swap_recovery": ["pretrain_source_model", "train_fasttext", "download_reference_model"],
    "vocab_swap_frankenberta": ["pretrain_source_model"],
    "vocab_swap_frankenbert": ["pretrain_source_model"],
    "llm_mistral": ["pretrain_source_model", "finetune", "download_reference_model"],
}


# Plans beyond the paper grids, for the job counts the docs quote (scripts/job_counts.py PLANS): the demo,
# docs/cluster.md's worked example (German FOCUS up to its exported model), the composite and the rehearsals.
MORE_PLANS = {name: (configs, targets) for name, (configs, targets) in job_counts.PLANS.items()
              if name not in GRIDS}
COMPOSITES = {"papers"}  # configs/*.yaml that name studies rather than being one

RUNNER, planned_jobs = job_counts.RUNNER, job_counts.planned_jobs  # every config planned in one process


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory):
    """Every paper config (and MORE_PLANS) planned offline (``snakemake -n``), under the network guard, each
    in an empty working directory: {name: returncode, output, jobs (per rule), planned (every job: rule,
    wildcards), network (refused connections), files (left behind)}."""
    root = tmp_path_factory.mktemp("paper-configs")
    (root / "guard").mkdir()
    (root / "guard" / "sitecustomize.py").write_text(NETGUARD)
    plans = {**{name: ((f"configs/{name}.yaml",), []) for name in GRIDS}, **MORE_PLANS}
    specs = []
    for name, (config, targets) in plans.items():
        (root / name).mkdir()
        configs = [str(REPO / c) for c in config]
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
                         "jobs": planned_job_counts(output.read_text()),
                         "planned": planned_jobs(output.read_text()),
                         "network": network.read_text() if network.exists() else "",
                         "files": sorted(os.listdir(root / name))}
    # anything refused before the first config's run (imports) is logged under network.log
    assert not (root / "network.log").exists(), (root / "network.log").read_text()
    return results


def test_every_paper_config_is_covered():
    assert sorted(p.stem for p in CONFIGS.glob("*.yaml")) == sorted([*GRIDS, *COMPOSITES])
    assert (sorted(yaml.safe_load((CONFIGS / "papers.yaml").read_text())["studies"])
            == sorted(f"configs/{n}.yaml" for n in GRIDS))


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
    """configs/papers.yaml plans exactly the jobs of the paper configs run alone (rule and outputs), each
    once: a paper's own jobs under its study's rule names, what papers share by name (corpora, downloads, task
    data, word vectors, dictionaries) by one job. The saving is the count docs/cluster.md quotes."""
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


# --- the job counts and grid sizes the docs quote: one generated block of docs/cluster.md -------------------
@pytest.mark.slow
def test_the_job_counts_in_the_docs_are_the_planned_ones(dry_runs):
    """docs/cluster.md's papers' table and grid details (scripts/job_counts.py --write) are what the dry runs
    plan."""
    plans = {name: job_counts.Plan(run["planned"]) for name, run in dry_runs.items()}
    assert all(run["returncode"] == 0 for run in dry_runs.values())
    doc = (REPO / "docs/cluster.md").read_text()
    assert job_counts.current(doc) == job_counts.block(job_counts.tables(plans)), \
        "docs/cluster.md: the job counts differ from the plans; run python scripts/job_counts.py --write"
    composite, alone, once = job_counts.shared(plans)
    assert once == SHARED_JOBS and composite == plans["papers"].total


# Numbers of jobs and runs are quoted with these words; outside the generated block, README.md and docs/*.md
# quote none (they point to it), but for the ones listed here with the reason they are no count of a plan. A
# benchmark records the count of the run it measured, so docs/benchmarks.md is not held to the plans.
COUNTED = r"\b\d[\d,]* (?:more )?(?:jobs|LAPT runs|CLM runs|fine-tunings|inits|zero-shot (?:cells|jobs))\b"
NOT_PLAN_COUNTS = {
    ("docs/architecture.md", "4 script jobs"): "the fewest jobs for which warm starts pay",
    ("docs/cluster.md", "12 jobs"): "one rehearsal run of a single target, not a plan's count",
}
RECORDS = {"docs/benchmarks.md"}


def normalized(text: str) -> str:
    return " ".join(text.split())


def test_every_quoted_count_is_generated():
    """A job or run count in README.md or docs/*.md outside the generated block fails: point to the block."""
    for page, quoted in NOT_PLAN_COUNTS:
        assert quoted in normalized((REPO / page).read_text()), (
            f"NOT_PLAN_COUNTS: {page} no longer says {quoted!r}")
    unchecked = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        page = path.relative_to(REPO).as_posix()
        if page in RECORDS:
            continue
        text = path.read_text()
        if job_counts.BEGIN in text:
            text = text.replace(job_counts.current(text), "")
        text = normalized(text)
        for match in re.finditer(COUNTED, text):
            if (page, match.group(0)) not in NOT_PLAN_COUNTS:
                unchecked.append(f"{page}: {text[max(0, match.start() - 60):match.end() + 20]!r}")
    assert not unchecked, "\n".join(unchecked)
