"""Numbers and names checked at parse time: every edit of the tiny config below fails in ``check_config``
(before any job runs) with a message naming the key and what is wrong; the bounds' edges are accepted. Also:
every file name the path grammar derives from names of the longest length fits a file system, and
``vocab-transfer check`` names a YAML tag or a key given twice with its line, without constructing
anything."""

import inspect
import math
from pathlib import Path

import pytest
import yaml

from vocab_transfer.api import main as cli
from vocab_transfer.typed import SEED_MAX, VOCAB_SIZE_MAX
from vocab_transfer.workflow import paths
from vocab_transfer.workflow.config import ConfigError, check_config, too_long
from vocab_transfer.workflow.model import NAME_MAX

REPO = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((REPO / "tests" / "data" / "tiny_config.yaml").read_text())


def at(path: str, value):
    """An edit that sets the dotted key ``path`` of the config to ``value``."""
    def edit(c):
        *parents, last = path.split(".")
        node = c
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return edit


def renamed_method(name: str):
    def edit(c):
        c["methods"][name] = c["methods"].pop("random")
        c["lapt"]["runs"]["random"]["method"] = name
        for model in c["finetune"]["models"].values():
            if model.get("init") == "random":
                model["init"] = name
    return edit


def long_target(c):
    name = "t" * (NAME_MAX + 1)
    c["corpora"][name] = c["corpora"]["sw"]
    c["targets"].append(name)


def seeds_in_one_job(c):
    c["finetune"]["seeds"] = list(range(10**9, 10**9 + 30))  # 30 ten-digit seeds in one job's file names
    c["finetune"].pop("seeds_per_job", None)


CASES = [
    # non-finite numbers, wherever a float is read
    ("NaN LAPT learning rate", at("lapt.training.lr", math.nan),
     "lapt.training.lr: nan is not a finite number"),
    ("infinite LAPT learning rate", at("lapt.training.lr", math.inf),
     "lapt.training.lr: inf is not a finite number"),
    ("a run's -inf learning rate", at("lapt.runs.focus.lr", -math.inf),
     "lapt.runs.focus.lr: -inf is not a finite number"),
    ("infinite fine-tuning epochs", at("finetune.training.epochs", math.inf),
     "finetune.training.epochs: inf is not a finite number"),
    ("NaN fine-tuning learning rate", at("finetune.training.lr", math.nan),
     "finetune.training.lr: nan is not a finite number"),
    ("infinite weight decay", at("lapt.training.weight_decay", math.inf),
     "weight_decay: inf is not a finite number"),
    ("NaN held-out share", at("corpus_split.heldout_fraction", math.nan),
     "corpus_split.heldout_fraction: nan is not a finite number"),
    ("NaN masking probability", at("eval.mask_prob", math.nan), "eval.mask_prob: nan is not a finite number"),
    ("NaN method parameter", at("methods.keep_50.percent", math.nan),
     "methods.keep_50.percent: nan is not a finite number"),
    ("infinite WECHSEL temperature", at("methods.wechsel.temperature", math.inf),
     "methods.wechsel.temperature: inf is not a finite number"),
    # seeds
    ("negative seed", at("seed", -1), "seed: must be >= 0, got -1"),
    ("seed beyond 32 bits", at("seed", SEED_MAX + 1), f"seed: must be <= {SEED_MAX}, got {SEED_MAX + 1}"),
    ("negative masking seed", at("eval.seed", -5), "eval.seed: must be >= 0, got -5"),
    ("negative fine-tuning seed", at("finetune.seeds", [1, -2]), "finetune.seeds[1]: must be >= 0, got -2"),
    ("negative LAPT seed", at("lapt.runs.focus.seed", -3), "lapt.runs.focus.seed: must be >= 0, got -3"),
    # sizes
    ("vocabulary beyond 2**24", at("tokenizer.vocab_size", 2**31),
     f"tokenizer.vocab_size: must be <= {VOCAB_SIZE_MAX}, got {2**31}"),
    ("a vocabulary of 10**12", at("tokenizer.vocab_size", 10**12),
     "tokenizer.vocab_size: must be <= 16777216, got"),
    ("a pretraining vocabulary beyond 2**24", at("sources.tiny.pretrain.tokenizer.vocab_size", 2**25),
     "sources.tiny.pretrain.tokenizer.vocab_size: must be <= 16777216, got 33554432"),
    ("an integer beyond 64 bits", at("corpus_filter.max_chars", 10**30),
     "corpus_filter.max_chars: 1000000000000000000000000000000 does not fit in a 64-bit integer"),
    ("fastText vectors of a billion dimensions", at("fasttext.dim", 10**9),
     "fasttext.dim: must be <= 4096, got 1000000000"),
    ("AdamW beta of 1.5", at("lapt.training.betas", [0.9, 1.5]),
     "lapt.training.betas[1]: must be < 1, got 1.5"),
    ("one AdamW beta", at("finetune.training.betas", [0.9]),
     "finetune.training.betas: needs at least 2 item(s), got 1"),
    ("AdamW epsilon of 0", at("lapt.training.eps", 0.0), "lapt.training.eps: must be > 0, got 0.0"),
    ("no checkpoints kept", at("lapt.training.keep_checkpoints", 0),
     "lapt.training.keep_checkpoints: must be >= 1, got 0"),
    ("dropout of the DP MLPs at 1", at("finetune.training.mlp_dropout", 1.0),
     "finetune.training.mlp_dropout: must be < 1, got 1.0"),
    # sequence lengths against the positions a source is known to have
    ("evaluation blocks longer than the source's positions", at("eval.seq_len", 64),
     "eval.seq_len is 64 tokens, but source 'tiny' takes at most 32 (pretrained here on blocks "
     "of that length)"),
    ("LAPT blocks longer than the source's positions", at("lapt.runs.focus.seq_len", 48),
     "lapt.runs.focus: seq_len is 48 tokens, but source 'tiny' takes at most 32"),
    ("a long phase longer than the source's positions", lambda c: c["lapt"]["runs"]["focus"].update(
        long_steps=2, long_seq_len=128), "lapt.runs.focus: long_seq_len is 128 tokens, but source 'tiny'"),
    # names every derived file name must fit
    ("a method name of 101 characters", renamed_method("m" * (NAME_MAX + 1)), "has at most 100 characters"),
    ("a target of 101 characters", long_target, "(101 characters) cannot be a name"),
    ("a LAPT run of 300 characters", lambda c: c["lapt"]["runs"].update({"r" * 300: {"method": "focus"}}),
     "lapt.runs: 'rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr'... (300 characters) cannot be a name"),
    ("a corpus language with a slash", at("corpora.sw.language", "sw/../x"),
     "corpora.sw.language: 'sw/../x' cannot be a name"),
    ("a corpus language of 101 characters", at("corpora.sw.language", "l" * 101), "corpora.sw.language"),
    ("a job's seeds naming too long a file", seeds_in_one_job,
     "trains 30 seeds (1000000000 to 1000000029), and its files are named by them"),
]


@pytest.mark.parametrize("name,edit,message", CASES, ids=[c[0] for c in CASES])
def test_bad_number_or_name_fails_at_parse_time(name, edit, message):
    config = yaml.safe_load(yaml.safe_dump(BASE))
    edit(config)
    with pytest.raises(ConfigError) as e:
        check_config(config)
    assert message in str(e.value), str(e.value)


ACCEPTED = [
    ("seed 0", at("seed", 0)),
    ("the largest seed", at("seed", SEED_MAX)),
    ("the largest vocabulary", at("tokenizer.vocab_size", VOCAB_SIZE_MAX)),
    ("a method name of 100 characters", renamed_method("m" * NAME_MAX)),
    ("evaluation blocks as long as the source's positions", at("eval.seq_len", 32)),
    ("fine-tuning longer than the positions (cut to them)", at("finetune.training.seq_len", 512)),
    ("thirty seeds, one a job", lambda c: (seeds_in_one_job(c), c["finetune"].update(seeds_per_job=1))),
]


@pytest.mark.parametrize("name,edit", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_edges_of_the_bounds_are_accepted(name, edit):
    config = yaml.safe_load(yaml.safe_dump(BASE))
    edit(config)
    check_config(config)


def test_every_derived_file_name_of_longest_names_fits_a_file_system():
    """Every path function of the grammar, called with names of NAME_MAX characters (languages, sources,
    methods, runs, tasks, tables, ...), gives file names that fit config.FILE_NAME_BYTES with the pipeline's
    temporary affixes."""
    name = "n" * NAME_MAX
    values = {"split": "heldout", "ext": "history.parquet", "preset": "deepfocus", "seeds": "1+2+3",
              "seed": 5, "stage": "lapt", "kind": "lapt_curves", "key": "mf-0123456789ab",
              "repo": "o" * 96 + "--" + "r" * 96}
    checked = 0
    for fname, fn in inspect.getmembers(paths, inspect.isfunction):
        if fn.__module__ != paths.__name__ or fname.startswith("_"):
            continue
        args = {p: values.get(p, name) for p in inspect.signature(fn).parameters}
        path = fn(**args)
        assert too_long(path) is None, (fname, path)
        checked += 1
    assert checked > 50
    assert too_long("results/" + "x" * 234) == "x" * 234  # the check itself can fail


def test_check_names_a_tag_and_constructs_nothing(tmp_path, capsys):
    marker = tmp_path / "ran"
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"seed: 1\nx: !!python/object/apply:os.system ['touch {marker}']\n")
    assert cli(["check", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}: line 2: tag !!python/object/apply:os.system is not allowed" in err
    assert not marker.exists()


def test_check_names_a_key_given_twice(tmp_path, capsys):
    text = (REPO / "tests" / "data" / "tiny_config.yaml").read_text() + "seed: 8\n"
    twice = tmp_path / "twice.yaml"
    twice.write_text(text)
    assert cli(["check", str(twice)]) == 1
    assert "key 'seed' given twice in one mapping (first at line 2)" in capsys.readouterr().err


def test_check_runs_the_parse_time_checks(tmp_path, capsys):
    config = yaml.safe_load(yaml.safe_dump(BASE))
    config["lapt"]["training"]["lr"] = math.nan
    bad = tmp_path / "nan.yaml"
    bad.write_text(yaml.safe_dump(config))
    assert cli(["check", str(bad)]) == 1
    assert "lapt.training.lr: nan is not a finite number" in capsys.readouterr().err
    assert cli(["check", str(REPO / "tests" / "data" / "tiny_config.yaml")]) == 0
    assert capsys.readouterr().out.strip().endswith("tiny_config.yaml: ok")
