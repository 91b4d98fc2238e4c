"""Bad configs, one table: each edit of the tiny config must fail at parse time (before any job runs) with a
message that names the key and says what is wrong. The cases are listed in docs/configuration.md ("What the
config checks")."""

from pathlib import Path

import pytest
import yaml

from vocab_transfer.workflow.config import ConfigError, check_config

REPO = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((REPO / "tests" / "data" / "tiny_config.yaml").read_text())


def at(path: str, value=None, *, drop: bool = False):
    """An edit that sets (or drops) the dotted key ``path`` of the config."""
    def edit(c):
        *parents, last = path.split(".")
        node = c
        for p in parents:
            node = node.setdefault(p, {})
        if drop:
            node.pop(last)
        else:
            node[last] = value
    return edit


CASES = [
    # unknown keys at every level
    ("unknown top-level key", at("pretrain_steps", 3), "pretrain_steps"),
    ("unknown corpus key", at("corpora.de.lang_code", "x"),
     "corpora.de: unknown key(s) ['lang_code']; known: ["),
    ("unknown fastText key", at("fasttext.dims", 3), "fasttext: unknown key(s) ['dims']; known: ["),
    ("unknown tokenizer key", at("tokenizer.size", 3), "tokenizer: unknown key(s) ['size']; known: ["),
    ("unknown eval key", at("eval.sequences", 3), "eval: unknown key(s) ['sequences']; known: ["),
    ("unknown method parameter", at("methods.focus.top_k", 3),
     "methods.focus: unknown parameter(s) ['top_k']"),
    ("unknown LAPT setting", at("lapt.training.stpes", 3), "unknown key"),
    ("unknown LAPT run setting", at("lapt.runs.focus.learning_rate", 1e-3), "learning_rate"),
    ("unknown fine-tuning setting", at("finetune.training.epoch", 1), "epoch"),
    ("unknown task key", at("finetune.tasks.he-ner.lang", "he"),
     "finetune.tasks.he-ner: unknown key(s) ['lang']; known: ["),
    ("unknown table key", at("tables.table3.colour", "red"),
     "tables.table3: unknown key(s) ['colour']; known: ["),
    ("unknown figure key", at("figures.figure4.colour", "red"),
     "figures.figure4: unknown key(s) ['colour']; known: ["),
    ("unknown source key", at("sources.tiny.revison", "main"),
     "sources.tiny: unknown key(s) ['revison']; known: ["),
    # wrong types
    ("dim as a string", at("fasttext.dim", "16"), "fasttext.dim: expected int, got '16'"),
    ("targets as a string", at("targets", "de"), "targets: expected a list, got 'de'"),
    ("seed as a float", at("seed", 1.5), "seed: expected int, got 1.5"),
    ("learning rate as a YAML string", at("lapt.training.lr", "5e-5"),
     "lapt.training.lr: expected a number, got '5e-5' (YAML reads 5e-5 as a string"),
    ("unknown LAPT precision", at("lapt.training.precision", "bf16-pure"),
     "lapt.training.precision: 'bf16-pure' is not one of"),
    ("unknown LAPT packing", at("lapt.training.packing", "docs"),
     "lapt.training.packing: 'docs' is not one of"),
    ("unknown LAPT distributed mode", at("lapt.runs.focus.distributed", "deepspeed"),
     "lapt.runs.focus.distributed: 'deepspeed' is not one of"),
    ("FSDP with MAD-X adapters", at("lapt.runs.adapter.distributed", "fsdp"),
     "lapt.runs.adapter.distributed: fsdp shards plain models; variant adapter and factorized"),
    ("fine-tuning batch size as a float", at("finetune.training.batch_size", 8.5),
     "finetune.training.batch_size: expected int, got 8.5"),
    ("WECHSEL k as a string", at("methods.wechsel.k", "10"), "methods.wechsel.k: expected int, got '10'"),
    # out of range
    ("keep 150%", at("methods.keep_50.percent", 150), "methods.keep_50.percent: must be <= 100, got 150"),
    ("WECHSEL temperature 0", at("methods.wechsel.temperature", 0.0),
     "methods.wechsel.temperature: must be > 0, got 0.0"),
    ("WECHSEL k 0", at("methods.wechsel.k", 0), "methods.wechsel.k: must be >= 1, got 0"),
    ("permute window -3", at("methods.permute_100.window", -3),
     "methods.permute_100.window: must be >= 1, got -3"),
    ("MF with 0 clusters", at("methods.mf10_kmeans_lex.clusters", 0),
     "methods.mf10_kmeans_lex.clusters: must be >= 1, got 0"),
    ("negative LAPT steps", at("lapt.training.steps", -5), "steps"),
    ("fastText dim 1", at("fasttext.dim", 1), "fasttext.dim: must be >= 2, got 1"),
    ("tiny vocabulary", at("tokenizer.vocab_size", 10), "tokenizer.vocab_size: must be >= 100, got 10"),
    ("negative GPUs", at("lapt.gpus", -1), "lapt.gpus: must be >= 0, got -1"),
    ("zero nodes", at("lapt.nodes", 0), "lapt.nodes: must be >= 1, got 0"),
    ("zero seeds per job", at("finetune.seeds_per_job", 0), "finetune.seeds_per_job: must be >= 1, got 0"),
    ("a seed twice", at("finetune.seeds", [1, 2, 1]), "finetune.seeds: items must be unique, got [1, 2, 1]"),
    ("mask probability above 1", at("eval.mask_prob", 1.5), "eval.mask_prob"),
    # unknown kinds and names
    ("unknown method kind", at("methods.x", {"kind": "focuss"}), "focuss"),
    ("both extension sizes", at("methods.extend.top_tokens", 10), "give one of ['top_tokens', 'new_tokens']"),
    ("method name with a slash", at("methods.a/b", {"kind": "random"}), "methods: 'a/b' cannot be a name"),
    ("LAPT run name with ..", lambda c: c["lapt"]["runs"].update({"..": {"method": "focus"}}),
     "lapt.runs: '..' cannot be a name"),
    ("table name with a slash", at("tables.t/x", {"rows": ["source"]}), "tables: 't/x' cannot be a name"),
    # missing pieces for a target
    ("target without a corpus", at("targets", ["de", "sw", "xx"]), "xx"),
    ("WECHSEL target without a dictionary", at("dictionaries.en", {"de": {"source": "identical"}}), "sw"),
    ("LAPT run of an unknown method", at("lapt.runs.focus.method", "nope"), "nope"),
    ("table row that is no model", at("tables.table3.rows", ["source", "nope"]),
     "['nope'] are not entries of finetune.models"),
    ("table column that is no task", at("tables.table3.groups", {"NER": ["xx-ner"]}),
     "['xx-ner'] are not entries of finetune.tasks"),
    ("figure task that is no task", at("figures.figure4.task", "xx"),
     "figures.figure4.task: 'xx' is not an entry of finetune.tasks"),
    ("vocabulary table of a language without a corpus",
     at("tables.t", {"kind": "overlap_counts", "languages": ["zz"]}),
     "tables.t.languages: ['zz'] are neither targets nor corpora keys"),
    ("probe of a task type without a probe",
     at("tables.p", {"kind": "init", "rows": ["focus"], "languages": ["he"],
                     "probes": {"DP": ["he-dep"]}}),
     "tables.p.probes.DP: ['he-dep'] are not of a probed task type (nli, pos, ner)"),
    ("probe of a task in another language",
     at("tables.p", {"kind": "init", "rows": ["focus"], "languages": ["sw"],
                                                             "probes": {"NER": ["he-ner"]}}),
     "tables.p.probes.NER: the languages of ['he-ner'] are not among the table's languages ['sw']"),
    ("probe sample of 0", at("eval.probe", {"max_train": 0}), "eval.probe.max_train: must be >= 1, got 0"),
    ("missing corpus source", at("corpora.de.source", drop=True),
     "corpora.de: missing required key 'source'"),
    ("tokenizer without a vocabulary size", at("tokenizer.vocab_size", drop=True),
     "tokenizer.vocab_size: needed to train the tokenizers of"),
    ("remote code for a model pretrained here", at("sources.tiny.trust_remote_code", True),
     "sources.tiny.trust_remote_code: a model pretrained here has no code of its own"),
    ("unknown tokenizer family", at("tokenizer.kind", "sentencepiece"),
     "tokenizer.kind: 'sentencepiece' is not one of"),
    ("tokenizer family and source layout together",
     lambda c: c["tokenizer"].update(kind="wordpiece", like="tiny"),
     "tokenizer: give kind (a tokenizer family) or like"),
    ("tokenizer like an unknown source", at("tokenizer.like", "llama"),
     "tokenizer.like: 'llama' is not an entry of 'sources'"),
    ("maskless tokenizer for a masked LM pretrained here", at("tokenizer.kind", "byte_level"),
     "tokenizer.kind: byte_level tokenizers have no mask token, which the masked LM(s) ['tiny']"),
    # a method on a language it cannot transfer to
    ("dictionary method on its own source language", at("methods.dict_match.targets", ["en"]), "dict_match"),
    # corpora on disk
    ("text corpus path that does not exist", at("corpora.xx", {"source": "text", "path": "no/such/file.txt"}),
     "corpora.xx.path: source text needs an existing file or folder, got 'no/such/file.txt'"),
    ("empty text corpus", "EMPTY", "corpora.xx.path: {path} is empty"),
    # settings that leave nothing, or do not fit the run
    ("LAPT warmup longer than the run", at("lapt.training.warmup_ratio", 5.0),
     "lapt.training.warmup_ratio: must be <= 1, got 5.0"),
    ("negative LAPT warmup", at("lapt.training.warmup_ratio", -0.1),
     "lapt.training.warmup_ratio: must be >= 0, got -0.1"),
    ("one LAPT run's warmup longer than the run", at("lapt.runs.focus.warmup_ratio", 1.5),
     "lapt.runs.focus.warmup_ratio: must be <= 1, got 1.5"),
    ("LAPT batch of 0", at("lapt.training.batch_size", 0), "lapt.training.batch_size: must be >= 1, got 0"),
    ("LAPT evaluation every 0 steps", at("lapt.training.eval_every", 0),
     "lapt.training.eval_every: must be >= 1, got 0"),
    ("LAPT checkpoints every 0 steps", at("lapt.training.checkpoint_every", 0),
     "lapt.training.checkpoint_every: must be >= 1, got 0"),
    ("LAPT batch not divisible by the GPUs", lambda c: c["lapt"].update(gpus=3),
     "batch_size 8 is not divisible by the 3 GPUs of the run (lapt.gpus 3 x lapt.nodes 1)"),
    ("LAPT batch not divisible by GPUs times nodes", lambda c: c["lapt"].update(gpus=2, nodes=3),
     "batch_size 8 is not divisible by the 6 GPUs of the run (lapt.gpus 2 x lapt.nodes 3)"),
    ("long-phase batch not divisible by the GPUs",
     lambda c: (c["lapt"].update(gpus=2), c["lapt"]["runs"]["focus"].update(
        long_steps=2, long_seq_len=64, long_batch_size=5)),
     "lapt.runs.focus: long_batch_size 5 is not divisible by the 2 GPUs"),
    ("fine-tuning warmup longer than the run", at("finetune.training.warmup_ratio", 2.0),
     "finetune.training.warmup_ratio: must be <= 1, got 2.0"),
    ("fine-tuning dev evaluation every 0 steps", at("finetune.training.eval_fraction", 0.0),
     "finetune.training.eval_fraction: must be > 0, got 0.0"),
    ("fine-tuning of 0 epochs", at("finetune.training.epochs", 0),
     "finetune.training.epochs: must be > 0, got 0"),
    ("a task's own warmup longer than the run", at("finetune.tasks.he-dep.training.warmup_ratio", 3.0),
     "finetune.tasks.he-dep.training.warmup_ratio: must be <= 1, got 3.0"),
    ("min_chars above max_chars", lambda c: c.update(corpus_filter={"min_chars": 50, "max_chars": 20}),
     "corpus_filter: min_chars 50 is greater than max_chars 20: every document would be dropped"),
    ("long-document pieces shorter than min_chars", lambda c: c.update(corpus_filter={"min_chars": 50,
                                                                                      "split_chars": 20}),
     "corpus_filter: split_chars 20 is below min_chars 50"),
    ("no held-out share", lambda c: c.update(corpus_split={"heldout_fraction": 0.0}),
     "corpus_split.heldout_fraction: 0 leaves no held-out text"),
    ("held-out share of 1", lambda c: c.update(corpus_split={"heldout_fraction": 1.0}),
     "corpus_split.heldout_fraction"),
    ("zero held-out documents", lambda c: c.update(corpus_split={"max_heldout_docs": 0}),
     "corpus_split.max_heldout_docs: must be >= 1, got 0"),
    ("corpus encoding that is no error mode", at("corpora.de.errors", "surrogateescape"),
     "corpora.de.errors: 'surrogateescape' is not one of"),
    ("two rows of an init table labelled alike",
     lambda c: (c["methods"]["focus_word"].update(label="FOCUS"), c.update(
        tables={**c["tables"],
                "init": {"kind": "init", "rows": ["focus", "focus_word"], "languages": ["sw"]}})),
     "tables.init.rows: ['focus', 'focus_word'] are all labelled 'FOCUS' (their methods entries' label)"),
    ("two rows of a fine-tuning table labelled alike",
     at("finetune.models.random-init.label", "Source model"),
     "tables.table3.rows: ['source', 'random-init'] are all labelled 'Source model' (their finetune.models "
     "entries' label)"),
    ("a row labelled like another's name",
     lambda c: (c["finetune"]["models"]["source"].pop("label"),
                c["finetune"]["models"]["random-init"].update(label="source")),
     "['source', 'random-init'] are all labelled 'source'"),
    # refining rows, benchmarks
    ("a refining row without its init row",
     at("methods.focus_td", {"kind": "token_distillation", "init": "focsu"}),
     "methods.focus_td.init: 'focsu' is not an entry of 'methods'"),
    ("a push repository with a space", lambda c: c.update(export={"push": {"repo": "my org/{source}"}}),
     "export.push.repo: 'my org/{source}' does not give a valid repository name"),
    ("a push repository with an unknown placeholder",
     lambda c: c.update(export={"push": {"repo": "o/{model}"}}),
     "export.push.repo: unknown placeholder(s) ['model']; known: ['source', 'target', 'stage', 'name']"),
    ("a push repository without its owner", lambda c: c.update(export={"push": {"repo": "just-{name}"}}),
     "does not give a valid repository name: write it as <user or organization>/<name>"),
    ("a refining row that names no init row", at("methods.focus_td", {"kind": "token_distillation"}),
     "methods.focus_td: missing required parameter 'init'"),
    ("refining rows that start from each other", lambda c: c["methods"].update(
        a={"kind": "token_distillation", "init": "b"}, b={"kind": "embedding_lm", "init": "a"}),
     "methods.a.init: the rows start from each other in a circle: a -> b -> a"),
    ("a refining row on an extension row",
     at("methods.focus_td", {"kind": "token_distillation", "init": "extend"}),
     "methods.focus_td.init: 'extend' extends the source vocabulary (kind extend)"),
    ("benchmarks on a target the config lacks", at("eval.benchmarks", {"tasks": {"fr": ["xnli_fr"]}}),
     "eval.benchmarks.tasks: 'fr' is not one of the config's targets ['de', 'sw']"),
    ("benchmarks of a masked LM pretrained here", at("eval.benchmarks", {"tasks": {"de": ["xnli_de"]}}),
     "eval.benchmarks: sources ['tiny'] are masked LMs pretrained here"),
    # GPUs and nodes
    ("a GPU method on a config without GPUs", at("methods.mf10_neural_rand.device", "cuda"),
     "methods.mf10_neural_rand.device: cuda needs a GPU, but this config's GPU jobs get none (lapt.gpus: 0)"),
]


@pytest.mark.parametrize("name, edit, message", CASES, ids=[c[0] for c in CASES])
def test_bad_config_fails_at_parse_time(name, edit, message, tmp_path, monkeypatch):
    config = yaml.safe_load(yaml.safe_dump(BASE))
    if edit == "EMPTY":
        empty = tmp_path / "empty.txt"
        empty.write_text("")
        config["corpora"]["xx"] = {"source": "text", "path": str(empty)}
        message = message.format(path=empty)
    else:
        edit(config)
    with pytest.raises(ConfigError) as e:
        check_config(config)
    assert message in str(e.value), str(e.value)


def local_source(tmp_path, config_json: str | None) -> str:
    """A folder standing in for a local source model: its config.json as given (None: none)."""
    folder = tmp_path / "model"
    folder.mkdir()
    if config_json is not None:
        (folder / "config.json").write_text(config_json)
    return str(folder)


FOLDER_CASES = [
    ("source folder without config.json", None, "has no config.json (not a save_pretrained folder)"),
    ("source config.json that is not JSON", "{vocab_size: 5", "config.json is unreadable"),
    ("source config.json without vocab_size", '{"model_type": "xlm-roberta"}',
     "config.json lacks ['vocab_size'] (the architecture and the embedding rows the pipeline reads)"),
    ("source config.json without model_type", '{"vocab_size": 800}', "config.json lacks ['model_type']"),
    ("source config.json that is a list", "[1, 2]", "config.json lacks ['model_type', 'vocab_size']"),
]


@pytest.mark.parametrize("name, config_json, message", FOLDER_CASES, ids=[c[0] for c in FOLDER_CASES])
def test_a_bad_local_source_folder_fails_at_parse_time(name, config_json, message, tmp_path):
    config = yaml.safe_load(yaml.safe_dump(BASE))
    folder = local_source(tmp_path, config_json)
    config["sources"]["local"] = {"model": folder}
    with pytest.raises(ConfigError) as e:
        check_config(config)
    assert f"sources.local.model: {folder}" in str(e.value) and message in str(e.value), str(e.value)


@pytest.mark.parametrize("files, message", [
    ({}, "has no tokenizer files (none of ['tokenizer.json'"),
    ({"README.md": "x"}, "has no tokenizer files"),
    ({"tokenizer.json": "{not json"}, "does not load as a tokenizer"),
    ({"tokenizer_config.json": '{"tokenizer_class": "NoSuchTokenizer"}'}, "does not load as a tokenizer"),
], ids=["empty folder", "no tokenizer files", "broken tokenizer.json", "unknown tokenizer class"])
def test_a_bad_pretrained_tokenizer_folder_fails_at_parse_time(files, message, tmp_path):
    config = yaml.safe_load(yaml.safe_dump(BASE))
    folder = tmp_path / "tok"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    config["tokenizer"]["pretrained"] = {"sw": str(folder)}
    with pytest.raises(ConfigError) as e:
        check_config(config)
    assert f"tokenizer.pretrained.sw: {folder}" in str(e.value) and message in str(e.value), str(e.value)


def test_at_least_forty_cases_listed_in_the_docs():
    assert len(CASES) >= 40
    docs = (REPO / "docs" / "configuration.md").read_text()
    assert "What fails at parse time" in docs and "tests/test_bad_configs.py" in docs
