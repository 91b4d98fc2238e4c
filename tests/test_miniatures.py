"""The rehearsal's task miniatures (vocab_transfer.miniatures.tasks): every hub loader reads what write_task
wrote into a hub mirror, with rows in every split and every class of its label inventory, and the same spec
and seed give the same bytes."""

import pytest

from vocab_transfer import mirror
from vocab_transfer.data import tasks
from vocab_transfer.miniatures.tasks import WRITERS, write_task

SPECS = [  # as configs/*.yaml name them
    {"loader": "wikiann", "language": "de"},
    {"loader": "wikiann", "language": "bh"},  # not in wordfreq: pseudo-words
    {"loader": "germeval14"},
    {"loader": "masakhaner2", "language": "swa"},
    {"loader": "masakhaner2", "language": "xho"},
    {"loader": "xnli", "language": "sw"},
    {"loader": "pawsx", "language": "de"},
    {"loader": "glue", "config": "mnli", "dev_fraction": 0.025},
    {"loader": "glue", "config": "mrpc"},
    {"loader": "glue", "config": "stsb"},
    {"loader": "germanquad"},
    {"loader": "tydiqa_goldp", "language": "sw"},
    {"loader": "ud", "treebank": "de_gsd"},
    {"loader": "ud", "task": "dep", "treebank": "ar_padt"},
    {"loader": "ud", "task": "dep", "treebank": "bho_bhtb", "test_only": True},  # a zero-shot target
]
TAGS = {"wikiann": tasks.WIKIANN_TAGS, "germeval14": tasks.GERMEVAL14_TAGS,
        "masakhaner2": tasks.MASAKHANER2_TAGS, "ud": tuple(t for t in tasks.UD_UPOS if t != "_")}


def _id(spec: dict) -> str:
    return "-".join(str(v) for k, v in spec.items()
                    if k in ("loader", "language", "config", "task", "treebank"))


@pytest.fixture
def hub(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(mirror.MIRROR_ENV, str(tmp_path / "mirror"))
    return tmp_path / "mirror"


def _labels(task: str, ds) -> list:
    if task in ("ner", "pos", "dep"):
        return [t for seq in ds["deprels" if task == "dep" else "tags"] for t in seq]
    return ([a["text"][0] for a in ds["answers"]] if task == "qa"
            else ds["score" if task == "sts" else "label"])


@pytest.mark.parametrize("spec", SPECS, ids=_id)
def test_the_loader_reads_the_miniature_with_every_class(hub, spec):
    files = write_task(hub, spec)
    assert files and all(f.is_file() and f.name.endswith(".parquet") and hub in f.parents for f in files)
    ds = tasks.load_task(spec)
    task = tasks.spec_task(spec)
    scored = [s for s in ds if s.startswith("test")]
    assert scored == (["test", "test_mismatched"] if spec.get("config") == "mnli" else ["test"])
    used = scored if spec.get("test_only") else ["train", "dev", *scored]
    assert all(len(ds[s]) > 0 for s in used)
    for split in [s for s in used if s != "dev"]:
        labels = _labels(task, ds[split])
        assert len(set(labels)) > 1, (split, labels)
        if task in ("ner", "pos"):
            assert set(labels) == set(TAGS[spec["loader"]]), split
        elif task == "nli":
            assert set(labels) == set(tasks.label_list("nli", ds)), split
        elif task == "dep":
            assert "root" in labels and "punct" in labels


def test_writing_twice_gives_the_same_bytes_and_another_seed_others(tmp_path):
    for spec in SPECS:
        first, again = write_task(tmp_path / "a", spec), write_task(tmp_path / "b", spec)
        other = write_task(tmp_path / "c", spec, seed=1)
        rel = [p.relative_to(tmp_path / "a") for p in first]
        assert (rel == [p.relative_to(tmp_path / "b") for p in again]
                == [p.relative_to(tmp_path / "c") for p in other])
        assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again], spec
        assert [p.read_bytes() for p in first] != [p.read_bytes() for p in other], spec


def test_tydiqa_languages_written_one_after_another_are_both_read(hub):
    for language in ("sw", "ar"):
        write_task(hub, {"loader": "tydiqa_goldp", "language": language})
    for language, name in (("sw", "swahili"), ("ar", "arabic")):
        ds = tasks.load_task({"loader": "tydiqa_goldp", "language": language})
        assert all(len(d) and all(i.startswith(f"{name}-") for i in d["id"]) for d in ds.values())


def test_loaders_without_a_hub_dataset(tmp_path):
    assert set(WRITERS) == {name for name in tasks.LOADERS if not name.startswith("bclm_")}
    for spec in ({"loader": "bclm_ner"}, {"loader": "nope"}):
        with pytest.raises(ValueError, match=f"{spec['loader']}.*known: wikiann"):
            write_task(tmp_path, spec)
    assert write_task(tmp_path,
                      {"loader": "wikiann", "data_files": {"train": "x.json", "test": "y.json"}}) == []
    assert write_task(tmp_path, {"loader": "bclm_pos", "data_files": {"train": "x.conllu"}}) == []
    assert not any(tmp_path.iterdir())
    with pytest.raises(ValueError, match="config"):
        write_task(tmp_path, {"loader": "glue"})
