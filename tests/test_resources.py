"""What jobs ask the scheduler for (vocab_transfer.workflow.resources): defaults follow the input size, the config
replaces them, and mistakes in the config are named."""

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
    assert res.runtime(cfg, "tokenize_corpus")(None, Input(corpus=str(small))) == res.COSTS["tokenize_corpus"].minutes + 1
    assert res.threads({"resources": {"tokenize_corpus": {"threads": 16}}}, "tokenize_corpus") == 16
    extra = res.mem_mb({}, "train_tokenizer", lambda w, i: 5000)(None, Input(corpus=str(small)))
    assert extra >= 5000 + res.COSTS["train_tokenizer"].mem_mb


def test_tokenizer_and_fasttext_memory_follow_the_sample_and_the_matrices(tmp_path):
    stats = {"train_docs": 1_000_000, "train_bytes": 150_000_000}
    assert res.tokenizer_sample_mb(stats, 300_000) == pytest.approx(20 * 45)  # 45 MB sampled, 20 bytes per byte
    assert res.tokenizer_sample_mb(stats, None) == pytest.approx(20 * 150)
    assert res.tokenizer_sample_mb({}, 300_000) == 0
    assert res.fasttext_mem_mb(100, 50_000) == pytest.approx((2 * 50_000 + 2_000_000) * 400 / 1e6)
    assert res.fasttext_mem_mb(100, 50_000, maxn=0) == pytest.approx(100_000 * 400 / 1e6)
    (tmp_path / "stats.json").write_text(json.dumps(stats))
    assert res.read_json(tmp_path / "stats.json") == stats and res.read_json(tmp_path / "none.json") == {}


def test_init_memory_follows_the_embedding_rows_not_the_model(tmp_path):
    """init_embeddings reads only the embedding rows: a Mistral-7B-shaped config (untied, 2 x 32,000 x 4,096) asks
    for the same memory whatever its layers weigh, and a tied head counts once."""
    mistral = {"model_type": "mistral", "vocab_size": 32000, "hidden_size": 4096, "tie_word_embeddings": False}
    for name, config in {"untied": mistral, "tied": mistral | {"tie_word_embeddings": True},
                         "gemma3": {"text_config": mistral}}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    (tmp_path / "untied" / "model.safetensors").write_bytes(b"x" * 50_000_000)  # stands in for 14 GB of layers
    mem = res.mem_mb({}, "init_embeddings", res.init_mem_mb)
    untied = mem(None, Input(model=str(tmp_path / "untied")))
    assert res.embedding_gb(tmp_path / "untied") == pytest.approx(2 * 32000 * 4096 * 4 / 1e9)
    assert untied == 4700  # 2,000 + 2,500 per GB of rows, rounded up to 100 MB
    assert mem(None, Input(model=str(tmp_path / "tied"))) < untied == mem(None, Input(model=str(tmp_path / "gemma3")))
    assert mem(None, Input(model=str(tmp_path / "missing"))) == res.COSTS["init_embeddings"].mem_mb  # a dry run


def test_resource_mistakes_are_named():
    rules = ["prepare_corpus", "train_fasttext", "tokenize_corpus"]
    assert res.check({"resources": {"tokenize_corpus": {"threads": 8}}}, rules) == []
    unknown, recipe = res.check({"resources": {"tokenise_corpus": {"mem_mb": 1},
                                               "train_fasttext": {"threads": 8}}}, rules)
    assert unknown.startswith("resources.tokenise_corpus: no rule of that name") and "tokenize_corpus" in unknown
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
    child = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
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
