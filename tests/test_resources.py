"""What jobs ask the scheduler for (vocab_transfer.workflow.resources): defaults follow the input size, the
config replaces them, and mistakes in the config are named."""

import json
import platform

import pytest

from vocab_transfer.workflow import resources as res


class Input(dict):
    """The `input` a Snakemake resource function receives: named files."""


def test_requests_grow_with_the_data_and_the_config_replaces_them(tmp_path):
    small, big = tmp_path / "small", tmp_path / "big"
    small.mkdir()
    big.mkdir()
    (small / "part-00000.parquet").write_bytes(b"x" * 1000)
    for i in range(3):  # a folder is measured by its files (a parquet dataset, a shard)
        (big / f"part-{i:05d}.parquet").write_bytes(b"x" * 400_000_000)
    mem, runtime = res.mem_mb({}, "evaluate_init"), res.runtime({}, "tokenize_corpus")
    assert mem(None, Input(model=str(small))) < mem(None, Input(model=str(big)))
    assert runtime(None, Input(corpus=str(small))) < runtime(None, Input(corpus=str(big)))
    assert mem(None, Input(model=str(tmp_path / "missing"))) == res.COSTS["evaluate_init"].mem_mb  # a dry run
    cfg = {"resources": {"evaluate_init": {"mem_mb": 123}, "default": {"runtime": 7}}}
    assert res.mem_mb(cfg, "evaluate_init")(None, Input(model=str(big))) == 123
    assert res.runtime(cfg, "make_init_table")(None, Input()) == 7  # rules without a cost take `default`
    assert (res.runtime(cfg, "tokenize_corpus")(None, Input(corpus=str(small)))
            == res.COSTS["tokenize_corpus"].minutes + 1)
    assert res.threads({"resources": {"tokenize_corpus": {"threads": 16}}}, "tokenize_corpus") == 16
    extra = res.mem_mb({}, "train_tokenizer", lambda w, i: 5000)(None, Input(corpus=str(small)))
    assert extra >= 5000 + res.COSTS["train_tokenizer"].mem_mb


def test_tokenizer_and_fasttext_memory_follow_the_sample_and_the_matrices(tmp_path):
    stats = {"train_docs": 1_000_000, "train_bytes": 150_000_000}
    # 45 MB sampled, 20 bytes per byte
    assert res.tokenizer_sample_mb(stats, 300_000) == pytest.approx(20 * 45)
    assert res.tokenizer_sample_mb(stats, None) == pytest.approx(20 * 150)
    assert res.tokenizer_sample_mb({}, 300_000) == 0
    assert res.fasttext_mem_mb(100, 50_000) == pytest.approx((2 * 50_000 + 2_000_000) * 400 / 1e6)
    assert res.fasttext_mem_mb(100, 50_000, maxn=0) == pytest.approx(100_000 * 400 / 1e6)
    (tmp_path / "stats.json").write_text(json.dumps(stats))
    assert res.read_json(tmp_path / "stats.json") == stats and res.read_json(tmp_path / "none.json") == {}


def test_init_memory_follows_the_embedding_rows_not_the_model(tmp_path):
    """init_embeddings reads only the embedding rows: a Mistral-7B-shaped config (untied, 2 x 32,000 x 4,096)
    asks for the same memory whatever its layers weigh, and a tied head counts once."""
    mistral = {"model_type": "mistral", "vocab_size": 32000, "hidden_size": 4096,
               "tie_word_embeddings": False}
    for name, config in {"untied": mistral, "tied": mistral | {"tie_word_embeddings": True},
                         "gemma3": {"text_config": mistral}}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    # stands in for 14 GB of layers
    (tmp_path / "untied" / "model.safetensors").write_bytes(b"x" * 50_000_000)
    mem = res.mem_mb({}, "init_embeddings", res.init_mem_mb)
    untied = mem(None, Input(model=str(tmp_path / "untied")))
    assert res.embedding_gb(tmp_path / "untied") == pytest.approx(2 * 32000 * 4096 * 4 / 1e9)
    assert untied == 4700  # 2,000 + 2,500 per GB of rows, rounded up to 100 MB
    assert (mem(None, Input(model=str(tmp_path / "tied"))) < untied
            == mem(None, Input(model=str(tmp_path / "gemma3"))))
    # a dry run
    assert mem(None, Input(model=str(tmp_path / "missing"))) == res.COSTS["init_embeddings"].mem_mb


def test_resource_mistakes_are_named():
    rules = ["prepare_corpus", "train_fasttext", "tokenize_corpus"]
    assert res.check({"resources": {"tokenize_corpus": {"threads": 8}}}, rules) == []
    unknown, recipe = res.check({"resources": {"tokenise_corpus": {"mem_mb": 1},
                                               "train_fasttext": {"threads": 8}}}, rules)
    assert (unknown.startswith("resources.tokenise_corpus: no rule of that name")
            and "tokenize_corpus" in unknown)
    assert recipe.startswith("resources.train_fasttext.threads") and "fasttext.threads" in recipe


def test_return_freed_memory_sets_glibc_thresholds():
    from vocab_transfer.memory import return_freed_memory

    assert return_freed_memory() is (platform.libc_ver()[0] == "glibc")


def test_peak_memory_is_this_programs_not_its_parents():
    """A job started by a big process reports its own peak (VmHWM), not the parent's memory at the fork."""
    import subprocess
    import sys

    import numpy as np

    ballast = np.ones(400 * 2**20 // 8)  # this process: 400 MB more than the child will ever use
    code = "from vocab_transfer.memory import peak_rss_mb; print(peak_rss_mb())"
    child = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout)
    assert child < 200, child
    assert ballast.sum() > 0


def test_a_job_logs_its_peak_memory_at_exit(tmp_path):
    import subprocess
    import sys

    from vocab_transfer.memory import PEAK_MEMORY

    code = (f"from vocab_transfer.workflow.job import setup_job\nsetup_job({str(tmp_path / 'job.log')!r})\n"
            "import numpy as np\nx = np.ones(300 * 2**20 // 8)\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    line = [x for x in (tmp_path / "job.log").read_text().splitlines() if PEAK_MEMORY in x]
    assert len(line) == 1 and 300 < float(line[0].split(PEAK_MEMORY + ":")[1].split("MB")[0]) < 500


# --- requests from the work: the recorded download, fastText's threads, LAPT's tokens -----------------------
def fetched(folder, files):
    folder.mkdir(parents=True)
    (folder / "fetch.json").write_text(json.dumps({"files": [{"path": p, "size": s} for p, s in files],
                                                   "bytes": sum(s for _, s in files)}))
    return str(folder)


def test_prepare_corpus_asks_for_the_size_its_download_recorded(tmp_path):
    from types import SimpleNamespace

    config = {"corpora": {"xh": {"source": "cc100", "lang": "xh"}, "de": {"source": "cc100", "lang": "de"},
                          "sm": {"source": "mc4", "lang": "sm", "max_bytes": 10**9}}}
    xh = fetched(tmp_path / "xh", [("xh.txt.xz", 8_000_000)])
    de = fetched(tmp_path / "de", [("de.txt.xz", 18_000_000_000)])
    sm = fetched(tmp_path / "sm", [("a.json.gz", 2 * 10**9), ("b.json.gz", 10**9)])
    assert res.corpus_gb(config, "xh", xh) == pytest.approx(0.032)  # 4 bytes of text per byte of xz
    assert res.corpus_gb(config, "de", de) == pytest.approx(72.0)
    assert res.corpus_gb(config, "sm", sm) == pytest.approx(1.0)  # 9 GB of text, capped at 1
    assert res.corpus_gb(config, "de", tmp_path / "missing") == res.HUB_CORPUS_GB  # before the download
    minutes = res.runtime(config, "prepare_corpus",
                          lambda w, i: res.corpus_gb(config, w.corpus, i["fetched"]))
    small, big = (minutes(SimpleNamespace(corpus=c), {"fetched": f}) for c, f in (("xh", xh), ("de", de)))
    assert small == 21 and big == 236  # 20 + 3 per GB of text
    streamed = {"corpora": {"de": {"source": "cc100", "lang": "de", "fetch": False}}}
    assert res.corpus_gb(streamed, "de") == res.HUB_CORPUS_GB * res.STREAMING_SLOWDOWN


def test_fasttext_time_is_divided_by_its_threads():
    assert res.fasttext_work(100, 3, 1) == 1
    assert res.fasttext_work(300, 3, 1) == 3 and res.fasttext_work(100, 6, 1) == 2
    assert res.fasttext_work(100, 3, 2) == pytest.approx(1 / 1.8)  # 1.9x measured on 2 threads
    assert res.fasttext_work(300, 3, 16) == pytest.approx(3 / 13)


def test_a_request_over_a_day_is_printed_once(capsys):
    from types import SimpleNamespace

    f = res.runtime({"study": "s", "resources": {"train_fasttext": {"runtime": 2000}}}, "train_fasttext")
    assert f(SimpleNamespace(target="de"), {}) == 2000 and f(SimpleNamespace(target="de"), {}) == 2000
    err = capsys.readouterr().err.splitlines()
    assert err == ["note: s_train_fasttext (target=de): 33.3 h; set resources.train_fasttext.runtime "
                   "(minutes) to ask for another time"]


def lapt(**kw):
    from vocab_transfer.training.settings import LaptConfig

    return LaptConfig.parse(kw)


def test_lapt_time_follows_its_tokens_the_model_and_the_gpus():
    """UNKs' 100k steps of 64 x 256 on mBERT (10k target vocabulary) and one A100 take hours; the Mistral
    study's 8,000 steps of 64 x 2,048 tokens on 4 A100s take days: more than the 24 h a submission asks
    for."""
    mbert = res.compute_params(res.SOURCE_SHAPES["google-bert/bert-base-multilingual-cased"], 10000)
    mistral = res.compute_params(res.SOURCE_SHAPES["mistralai/Mistral-7B-v0.1"])
    assert mbert == pytest.approx(12 * (4 * 768**2 + 2 * 768 * 3072) + 10000 * 768)
    assert 7.0e9 < mistral < 7.3e9  # 7.24B with the input embedding, which costs no FLOPs
    unks = res.lapt_minutes(lapt(steps=100000, batch_size=64, seq_len=256, eval_every=5000,
                                 checkpoint_every=5000), mbert, gpus=1)
    llm = res.lapt_minutes(lapt(steps=8000, batch_size=64, seq_len=2048, gradient_checkpointing=True,
                                precision="bf16_pure", eval_every=500, eval_sequences=256,
                                checkpoint_every=250),
                           mistral, gpus=4)
    assert unks["tokens"] == 100000 * 64 * 256 and 120 < unks["minutes"] < 300
    assert 40 * 60 < llm["minutes"] < 80 * 60
    h100 = res.lapt_minutes(lapt(steps=100000, batch_size=64, seq_len=256), mbert, gpus=1, gpu_model="h100")
    assert h100["minutes"] < unks["minutes"] and h100["gpu"] == "h100"
    two = res.lapt_minutes(lapt(steps=100000, batch_size=64, seq_len=256, variant="two_stage"), mbert, gpus=1)
    assert two["tokens"] == 120000 * 64 * 256  # the embedding stage's 20% more steps
    # a job asks for its estimate, at most lapt.runtime_min per submission; the config's own request wins
    short = res.capped_runtime({}, "train_lapt", 1440, "lapt.runtime_min", lambda w, i: unks)
    long = res.capped_runtime({}, "train_lapt", 1440, "lapt.runtime_min", lambda w, i: llm)
    fixed = res.capped_runtime({"resources": {"train_lapt": {"runtime": 99}}}, "train_lapt", 1440,
                               "lapt.runtime_min", lambda w, i: llm)
    cpu = res.capped_runtime({}, "train_lapt", 600, "lapt.runtime_min", lambda w, i: None)
    asked = (short(None, {}), long(None, {}), fixed(None, {}), cpu(None, {}))
    assert asked == (unks["minutes"], 1440, 99, 600)


def test_tokenizer_vocabulary_is_read_from_its_file(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"vocab": [["a", 0.0], ["b", -1.0]]},
                                                         "added_tokens": [{"id": 0}, {"id": 2}]}))
    assert res.tokenizer_vocab_size(tmp_path) == 3 and res.tokenizer_vocab_size(tmp_path / "none") is None


def test_a_job_on_the_gpu_partition_asks_for_a_gpu():
    cpu, gpu = {"slurm_partition": "cpu"}, {"slurm_partition": "gpu"}
    assert res.partition_gpus(0, cpu, gpu) == 1 and res.partition_gpus(2, cpu, gpu) == 2
    assert res.partition_gpus(0, cpu, {}) == 0 and res.partition_gpus(0, {}, {}) == 0


def test_the_requests_table_in_docs_is_current():
    """docs/cluster.md's table of every rule's request in configs/papers.yaml is what the plan asks for
    now."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "requests_table.py"
    proc = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]


# --- fine-tuning and zero-shot from their examples; memory from the model; GPUs and retries -----------------
def finetune_settings(**kw):
    from vocab_transfer.training.settings import FinetuneConfig

    return FinetuneConfig.parse(kw)


def test_finetune_time_follows_the_examples_epochs_seeds_and_model():
    """FOCUS's XNLI cell (392,702 pairs x 2 epochs x 256 tokens, 5 seeds, XLM-R base) takes hours on an A100,
    well under finetune.runtime_min's 12 h; MRPC (3,668 pairs) takes minutes; a seed more, an epoch more, a
    bigger model take longer, an H100 less."""
    xlmr = res.compute_params(res.SOURCE_SHAPES["FacebookAI/xlm-roberta-base"], head=False)
    assert xlmr == 12 * (4 * 768**2 + 2 * 768 * 3072)  # no MLM head: a task head of a few labels
    focus = finetune_settings(epochs=2, batch_size=128, seq_len=256)
    xnli = res.task_rows(None, {"loader": "xnli", "language": "de"})
    assert xnli == {"train": 392_702, "dev": 2_490, "test": 5_010}
    five = res.finetune_minutes(focus, xnli, xlmr, runs=5)
    one = res.finetune_minutes(focus, xnli, xlmr, runs=1)
    assert five["tokens"] == 5 * (2 * 392_702 + (20 + 1) * 2_490 + 5_010) * 256
    assert 120 < five["minutes"] < 720 and one["minutes"] < five["minutes"] / 3
    three_epochs = res.finetune_minutes(finetune_settings(epochs=3, seq_len=256), xnli, xlmr)
    assert three_epochs["minutes"] > one["minutes"]
    assert res.finetune_minutes(focus, xnli, xlmr, gpu_model="h100")["minutes"] < one["minutes"]
    mrpc = res.task_rows(None, {"loader": "glue", "config": "mrpc"})
    assert res.finetune_minutes(focus, mrpc, xlmr, runs=5)["minutes"] < 60
    # a zero-shot cell evaluates the test split once per (seed, source task): no training
    test = res.finetune_minutes(focus, xnli, xlmr, runs=20, train=False)
    assert test["tokens"] == 20 * 5_010 * 256 and test["minutes"] < one["minutes"]
    # a loader the table does not know, before prepare_task: no estimate (the config's runtime_min is asked)
    assert res.task_rows(None, {"loader": "local", "data_files": {}}) is None


def test_task_examples_come_from_the_prepared_parquet_files(tmp_path):
    import pandas as pd

    for split, n in {"train": 7, "dev": 3, "test": 2, "test_mismatched": 4}.items():
        pd.DataFrame({"x": range(n)}).to_parquet(tmp_path / f"{split}.parquet")
    assert res.task_rows(tmp_path, {"loader": "xnli"}) == {"train": 7, "dev": 3, "test": 6}


def test_a_finetune_request_is_its_estimate_at_most_the_limit_and_an_evaluation_over_it_is_named(capsys):
    from types import SimpleNamespace

    quick = {"minutes": 50, "tokens": 1e9, "params": 8.5e7, "gpus": 1, "gpu": "a100", "tokens_per_s": 9e4}
    slow = {**quick, "minutes": 900}
    assert res.capped_runtime({}, "finetune", 720, "finetune.runtime_min", lambda w, i: quick)(None, {}) == 50
    assert res.capped_runtime({}, "finetune", 720, "finetune.runtime_min", lambda w, i: slow)(None, {}) == 720
    cell = SimpleNamespace(task="hi-ner", ftmodel="m")
    f = res.capped_runtime({}, "evaluate_zero_shot", lambda w: 100, "zero_shot.eval_runtime_min",
                           lambda w, i: {**slow, "minutes": 150}, resumes=False)
    assert f(cell, {}) == 100
    err = capsys.readouterr().err
    assert "does not resume: it may run out of time; raise zero_shot.eval_runtime_min" in err


def test_training_memory_follows_the_model_and_the_config_wins(tmp_path):
    """Mistral-7B (7.24B parameters) in bf16 loaded by 4 GPU processes and gathered once more for a
    checkpoint: 5 x 14.5 GB, x 1.25, + 4 GB; XLM-R base in float32 on one GPU: a few GB."""
    mistral = res.total_params(res.SOURCE_SHAPES["mistralai/Mistral-7B-v0.1"])
    assert 7.2e9 < mistral < 7.3e9  # the untied head and the input embedding both count
    assert res.training_mem_mb(mistral, processes=4, weight_bytes=2) == 95_000
    xlmr = res.total_params(res.SOURCE_SHAPES["FacebookAI/xlm-roberta-base"])
    assert 2.7e8 < xlmr < 2.8e8 and res.training_mem_mb(xlmr) == 7_000
    # and its encoded task data
    assert res.training_mem_mb(xlmr, data_tokens=392_702 * 256) > res.training_mem_mb(xlmr)
    from_model = res.model_mem_mb({}, "train_lapt", lambda w, i: 95_000)
    assert from_model(None, {"model": str(tmp_path)}) == 95_000
    config = {"resources": {"train_lapt": {"mem_mb": 128000}}}
    configured = res.model_mem_mb(config, "train_lapt", lambda w, i: 1)
    assert configured(None, {}) == 128_000
    # a model of unknown shape: its folder's size
    unknown = res.model_mem_mb({}, "finetune", lambda w, i: None)
    assert unknown(None, {"model": str(tmp_path)}) == res.COSTS["finetune"].mem_mb


def test_a_run_that_needs_more_submissions_gets_the_retries_for_them(capsys):
    """The Mistral study's 63 h LAPT runs at 24 h per submission need 3 submissions: their rule's retries
    become 2 + the profile's 2, so a failure still gets its retries; a rule whose jobs fit one submission
    keeps the profile's."""
    from types import SimpleNamespace

    estimates = {"long": {"minutes": 63 * 60, "tokens": 1.05e9, "params": 7.2e9, "gpus": 4, "gpu": "a100",
                          "tokens_per_s": 1e4}, "short": {"minutes": 300}}
    runtime = res.capped_runtime({"study": "llm"}, "train_lapt", 1440, "lapt.runtime_min",
                                 lambda w, i: estimates[w.run])
    res.capped_runtime({"study": "llm"}, "finetune", 720, "finetune.runtime_min",
                       lambda w, i: {"minutes": 60})
    assert runtime(SimpleNamespace(run="long"), {}) == 1440
    err = capsys.readouterr().err
    assert "3 submissions, so the rule's retries become 2 + the profile's `retries`" in err
    lapt_rule = SimpleNamespace(name="llm_train_lapt", restart_times=2)
    ft_rule = SimpleNamespace(name="llm_finetune", restart_times=2)
    jobs = [SimpleNamespace(rule=lapt_rule, wildcards=SimpleNamespace(run=r), input={})
            for r in ("short", "long")]
    jobs.append(SimpleNamespace(rule=ft_rule, wildcards=SimpleNamespace(), input={}))
    lines = res.raise_retries(jobs, retries=2)
    assert (lapt_rule.restart_times, ft_rule.restart_times) == (4, 2)
    assert lines == ["note: llm_train_lapt: its longest job needs 3 submissions of lapt.runtime_min; "
                     "retries 4 (2 + the profile's retries 2)"]


def test_no_job_asks_for_no_gpu_on_the_gpu_partition():
    """In docs/cluster.md's table (current: test_the_requests_table_in_docs_is_current) every GPU-partition
    row asks for at least one GPU, and the config's memory of the Mistral study (128,000 MB) is what its LAPT
    jobs ask for; the check before the first submission refuses a GPU-less job on a partition others ask GPUs
    on."""
    from pathlib import Path

    from vocab_transfer.workflow.cluster import check_submission

    doc = (Path(__file__).resolve().parents[1] / "docs" / "cluster.md").read_text()
    rows = {cells[0]: cells for line in doc.splitlines() if line.startswith("| ") and line.endswith("|")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    gpu_rows = {rule: cells for rule, cells in rows.items() if cells[-1] == "GPU"}
    assert "unks_factorize_source" in gpu_rows and all(not c[5].startswith("0") for c in gpu_rows.values())
    assert rows["llm_mistral_train_lapt"][3] == "128,000"
    jobs = [("train_lapt", {"slurm_partition": "gpu", "gpu": 1}),
            ("factorize_source", {"slurm_partition": "gpu", "gpu": 0}),
            ("prepare_corpus", {"slurm_partition": "cpu"})]
    problems = check_submission("slurm", jobs, gres=lambda p: None, default_partition="cpu")
    assert len(problems) == 1 and "rules factorize_source ask for no GPU on partition 'gpu'" in problems[0]
    # one partition for everything (the default): CPU jobs there are no problem
    one = [("train_lapt", {"slurm_partition": "all", "gpu": 1}),
           ("prepare_corpus", {"slurm_partition": "all"})]
    assert check_submission("slurm", one, gres=lambda p: None, default_partition="all") == []
