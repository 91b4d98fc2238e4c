"""eval.benchmarks checked before work (vocab_transfer.eval.benchmarks, vocab_transfer.workflow.config): a
masked-LM source and a misspelled task refused at parse time, an offline download job with hub datasets
refused at once, and the chance-adjusted share of the source's score kept."""

from __future__ import annotations

import json
import math
import time
import types
from pathlib import Path

import pandas as pd
import pytest

from vocab_transfer.eval import benchmarks as b
from vocab_transfer.workflow.config import (
    ConfigError,
    check_benchmark_tasks,
    check_benchmarks,
)
from vocab_transfer.workflow.views import source_is_masked

REGISTRY = {"tasks": {"arc_de": "alexandrainst/m_arc", "hellaswag_de": "alexandrainst/m_hellaswag",
                      "belebele_deu_Latn": "facebook/belebele", "sw_verses": "json", "py_task": ""},
            "groups": {"belebele": ["belebele_deu_Latn"], "mixed": ["sw_verses", "belebele"]}}
OFFLINE = ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE", "VOCAB_TRANSFER_HUB_MIRROR")


def model_folder(path: Path, arch: str, model_type: str) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"architectures": [arch], "model_type": model_type}))
    return path


def config(sources: dict, tasks=None) -> types.SimpleNamespace:
    """As much of a typed config as check_benchmarks reads."""
    spec = types.SimpleNamespace(tasks=tasks or {"de": ["arc_de"]}, methods=None, runs=None,
                                 include_path=None)
    return types.SimpleNamespace(eval=types.SimpleNamespace(benchmarks=spec), target_names=["de"], methods={},
                                 lapt=None, sources={k: types.SimpleNamespace(model=v, pretrain=None)
                                                     for k, v in sources.items()})


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(b, "task_registry", lambda include_path: REGISTRY)


# --- 1. masked-LM sources -----------------------------------------------------------------------------------
def test_a_local_masked_lm_source_is_refused_naming_the_key_and_the_source(tmp_path, registry):
    xlmr = model_folder(tmp_path / "xlmr", "XLMRobertaForMaskedLM", "xlm-roberta")
    qwen = model_folder(tmp_path / "qwen", "Qwen2ForCausalLM", "qwen2")
    check_benchmarks(config({"qwen": str(qwen)}))  # a decoder passes
    with pytest.raises(ConfigError, match=r"eval\.benchmarks: source 'xlmr' \(.*xlmr\) is a masked LM"):
        check_benchmarks(config({"qwen": str(qwen), "xlmr": str(xlmr)}))


def test_a_hub_source_is_judged_by_its_downloaded_config_else_left_to_the_job(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hub = types.SimpleNamespace(model="FacebookAI/xlm-roberta-base", pretrain=None)
    assert not source_is_masked("xlmr", hub)  # not downloaded yet: the job decides
    model_folder(tmp_path / "resources" / "models" / "xlmr", "XLMRobertaForMaskedLM", "xlm-roberta")
    assert source_is_masked("xlmr", hub)
    # no LM head named: model_type decides
    bert_type_only = model_folder(tmp_path / "bert", "BertModel", "bert")
    assert source_is_masked("bert", types.SimpleNamespace(model=str(bert_type_only), pretrain=None))
    gpt2_type_only = model_folder(tmp_path / "gpt2", "GPT2Model", "gpt2")
    assert not source_is_masked("gpt2", types.SimpleNamespace(model=str(gpt2_type_only), pretrain=None))


# --- 2. task names against lm-eval's registry ---------------------------------------------------------------
def test_a_misspelled_task_is_refused_with_close_matches(registry):
    check_benchmark_tasks({"de": ["arc_de", "belebele", "mixed"]}, None)  # tasks, groups and tags pass
    with pytest.raises(ConfigError, match=r"eval\.benchmarks\.tasks\.de: lm-eval knows no task, group or tag "
                                          r"'hellaswg_de' \(did you mean 'hellaswag_de'\?\)"):
        check_benchmark_tasks({"de": ["arc_de", "hellaswg_de"]}, None)
    with pytest.raises(ConfigError, match=r"'no_such_benchmark' \("):
        check_benchmark_tasks({"de": ["no_such_benchmark"]}, "tasks")


def test_without_lm_eval_the_names_are_left_to_the_job(monkeypatch):
    monkeypatch.setattr(b, "task_registry", lambda include_path: None)
    check_benchmark_tasks({"de": ["anything"]}, None)


def test_the_real_registry_is_cached_per_version_and_task_folder(tmp_path, monkeypatch):
    """lm-eval's own registry with an include_path task: built once (seconds), then read from the cache; a
    changed task folder is another cache entry."""
    pytest.importorskip("lm_eval")
    monkeypatch.setenv(b.REGISTRY_CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv("VOCAB_TRANSFER_HUB_MIRROR", raising=False)
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "mine.yaml").write_text("task: my_local_task\ndataset_path: json\ndataset_kwargs:\n"
                                      "  data_files:\n    test: mine.jsonl\noutput_type: multiple_choice\n"
                                      "test_split: test\ndoc_to_text: '{{q}}'\ndoc_to_choice: '{{choices}}'\n"
                                      "doc_to_target: 0\n")
    registry = b.task_registry(str(folder))
    assert registry["tasks"]["my_local_task"] == "json" and "arc_easy" in registry["tasks"]
    monkeypatch.setattr(b, "task_manager", lambda include_path: pytest.fail("the cache was not read"))
    start = time.perf_counter()
    assert b.task_registry(str(folder)) == registry
    assert time.perf_counter() - start < 0.3
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1
    before = b._registry_cache(str(folder))
    (folder / "other.yaml").write_text("task: other\ndataset_path: json\n")
    assert b._registry_cache(str(folder)) != before
    monkeypatch.setenv(b.REGISTRY_CACHE_ENV, "")
    assert b._registry_cache(str(folder)) is None


# --- 3. offline runs ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("env", [{"HF_DATASETS_OFFLINE": "1"}, {"HF_HUB_OFFLINE": "1"}])
def test_an_offline_run_refuses_hub_tasks_at_once(tmp_path, monkeypatch, env):
    for k in OFFLINE:
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match=r"eval\.benchmarks\.tasks: this run is offline .* tasks \['mixed: "
                                         r"belebele_deu_Latn \(facebook/belebele\)'\]"):
        b.check_offline(["sw_verses", "mixed"], REGISTRY, cache, "eval.benchmarks.tasks")
    # local files, unknown
    b.check_offline(["sw_verses", "py_task"], REGISTRY, cache, "eval.benchmarks.tasks")
    (cache / "facebook___belebele").mkdir(parents=True)  # fetched before: the cache serves it
    b.check_offline(["belebele"], REGISTRY, cache, "eval.benchmarks.tasks")
    monkeypatch.setenv("VOCAB_TRANSFER_HUB_MIRROR", str(tmp_path / "mirror"))  # a mirror serves the rest
    b.check_offline(["arc_de"], REGISTRY, cache, "eval.benchmarks.tasks")


def test_the_download_job_fails_before_any_download_when_offline(tmp_path, monkeypatch):
    pytest.importorskip("lm_eval")
    import lm_eval.tasks

    for k in OFFLINE:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    entry = types.SimpleNamespace(kind=types.SimpleNamespace(name="TASK"),
                                  cfg={"dataset_path": "allenai/ai2_arc"})
    monkeypatch.setattr(b, "task_manager",
                        lambda include_path: types.SimpleNamespace(task_index={"arc_easy": entry}))
    monkeypatch.setattr(lm_eval.tasks, "get_task_dict", lambda *a, **k: pytest.fail("a download was tried"))
    start = time.perf_counter()
    with pytest.raises(ValueError,
                       match=r"eval\.benchmarks\.tasks: this run is offline.*arc_easy \(allenai/ai2_arc\)"):
        b.fetch(["arc_easy"], None, cache=tmp_path / "cache")
    assert time.perf_counter() - start < 5


# --- 4. the share kept over chance --------------------------------------------------------------------------
def test_kept_over_chance_beside_the_raw_share():
    rows = [("source", "s", "arc", "acc", 0.65), ("init", "focus", "arc", "acc", 0.45),
            ("source", "s", "arc", "acc_norm", 0.2), ("init", "focus", "arc", "acc_norm", 0.2),
            ("source", "s", "gsm8k", "exact_match", 0.4), ("init", "focus", "gsm8k", "exact_match", 0.2)]
    scores = pd.DataFrame([{"task": t, "metric": m, "filter": "none", "value": v} for _, _, t, m, v in rows])
    scores = b.add_chance(scores, {"arc": {"documents": 10, "chance": 0.25}, "gsm8k": {"documents": 10}})
    assert list(scores["chance"].fillna(-1)) == [0.25, 0.25, 0.25, 0.25, -1, -1]
    table = scores.assign(source="s", target="de", stage=[r[0] for r in rows], name=[r[1] for r in rows])
    kept = b.kept_share(table).set_index(["stage", "task", "metric"])
    init = kept.loc[("init", "arc", "acc")]
    assert init["kept"] == pytest.approx(0.45 / 0.65) and init["kept_over_chance"] == pytest.approx(0.5)
    assert math.isnan(kept.loc[("init", "arc", "acc_norm"), "kept_over_chance"])  # the source is below chance
    assert math.isnan(kept.loc[("init", "gsm8k", "exact_match"), "kept_over_chance"])
    assert kept.loc[("init", "gsm8k", "exact_match"), "kept"] == pytest.approx(0.5)
    assert "kept_over_chance" in b.kept_share(table.drop(columns="chance"))  # scores written before: NaN


def test_chance_is_the_mean_of_one_over_the_choices_of_the_documents_scored():
    task = types.SimpleNamespace(OUTPUT_TYPE="multiple_choice", doc_to_choice=lambda doc: doc["choices"])
    docs = [{"choices": ["a", "b", "c", "d"]}, {"choices": ["a", "b"]},
            {"choices": ["a", "b", "c", "d", "e"]}]
    assert b.chance(task, docs) == pytest.approx((0.25 + 0.5 + 0.2) / 3)
    assert b.chance(task, docs, limit=2) == pytest.approx(0.375)
    assert b.chance(types.SimpleNamespace(OUTPUT_TYPE="generate_until"), docs) is None


def test_the_benchmark_table_shows_both_shares():
    from vocab_transfer.report.tables import benchmark_table

    scores = pd.DataFrame([{"source": "s", "target": "de", "stage": st, "name": n, "task": "arc",
                            "metric": "acc", "filter": "none", "value": v, "chance": 0.25}
                           for st, n, v in (("source", "s", 0.65), ("init", "focus", 0.45))])
    long, md = benchmark_table(scores, {})
    assert "0.450 (69%; 50% over chance)" in md and "(score - chance) / (source - chance)" in md
    assert long["kept_over_chance"].notna().sum() == 2
