"""The paper tables' kinds (vocab_transfer.workflow.table_kinds): one class per kind in TABLE_KINDS, the
config's union made of them, and a table parsed as the class of its kind, which plans and draws it."""

import json
import typing

import pytest
from pydantic import TypeAdapter

from vocab_transfer.report import provenance as prov
from vocab_transfer.workflow.table_kinds import TABLE_KINDS, Table, TableSpec, VocabTable


def test_every_kind_of_the_union_has_one_class():
    kinds = [k for c in TableSpec.__subclasses__()
             for k in typing.get_args(c.model_fields["kind"].annotation)]
    assert kinds == list(TABLE_KINDS)
    assert all(issubclass(c, VocabTable)
               for k, c in TABLE_KINDS.items() if k not in ("finetune", "lapt", "init"))


@pytest.mark.parametrize("kind", list(TABLE_KINDS))
def test_a_table_parses_as_the_class_of_its_kind(kind):
    table = TypeAdapter(Table).validate_python(
        {"kind": kind, "rows": ["m"], "languages": ["de"], "steps": [0], "method": "wechsel"})
    assert type(table) is TABLE_KINDS[kind] and table.kind == kind
    assert table.written("languages") and not table.written("title")  # the keys as written survive


def test_a_table_without_a_kind_is_a_finetune_table():
    assert type(TypeAdapter(Table).validate_python({"rows": ["m"]})) is TABLE_KINDS["finetune"]


def test_a_corpus_table_is_drawn_with_the_provenance_of_each_row(tmp_path):
    stats = {"de": {"train_docs": 10, "train_bytes": 900}, "sw": {"train_docs": 12, "train_bytes": 800}}
    inputs = {}
    for lang, s in stats.items():
        (tmp_path / f"{lang}.json").write_text(json.dumps(s))
        inputs[f"stats__{lang}"] = str(tmp_path / f"{lang}.json")
    manifest = [{"input": f"stats__{lang}", "what": "stats", "language": lang} for lang in stats]
    table, md, entries = TABLE_KINDS["corpus_sizes"].render(
        inputs, manifest, {"kind": "corpus_sizes", "languages": ["de", "sw"], "title": "T1"}, {})
    assert table["train_docs"].tolist() == [10, 12] and md.startswith("**T1**")
    assert {(e["row"], e["artifact"]) for e in entries if e["field"] == "train_bytes"} == {
        ("de", inputs["stats__de"]), ("sw", inputs["stats__sw"])}
    assert prov.check_provenance(prov.provenance_frame(entries, "t1")) == []
