"""Pushing an export folder to the hub (vocab_transfer.export.push_export) through huggingface_hub's real
client, against a local fake of the hub's HTTP API (tests/fake_hub.py): repository creation,
the card's metadata check, the commit; and the errors that stop a push before anything is sent."""

import hashlib
import json
import sys
from pathlib import Path

import pytest
import torch
from huggingface_hub import ModelCard
from safetensors.torch import save_file

from vocab_transfer.export import CardInfo, model_card, push_export

sys.path.insert(0, str(Path(__file__).parent))
from fake_hub import FakeHub  # noqa: E402

TOKEN = "hf_fake_write_token"


@pytest.fixture(autouse=True)
def online(monkeypatch):
    """The tests run with HF_HUB_OFFLINE=1 (scripts/test.sh); a push needs the hub (here the fake one)."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def export(tmp_path) -> Path:
    """A finished export folder as export_init_model writes it: config, weights, tokenizer file, card."""
    folder = tmp_path / "results/export/xlmr/de/init/focus"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "xlm-roberta", "vocab_size": 64}))
    (folder / "tokenizer.json").write_text(json.dumps({"version": "1.0"}))
    save_file({"embeddings.weight": torch.arange(64 * 8, dtype=torch.float32).reshape(64, 8)},
              str(folder / "model.safetensors"))
    info = CardInfo(source="xlmr", source_model="FacebookAI/xlm-roberta-base", target="de", method="focus",
                    kind="focus", license="mit", corpus_stats={"spec": {"source": "oscar", "lang": "de"}},
                    init_loss={"mlm_loss": 4.0, "perplexity": 54.6, "objective": "mlm", "masked_tokens": 10},
                    command="snakemake ...")
    (folder / "README.md").write_text(model_card(info))
    return folder


def digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_push_uploads_the_folder_byte_for_byte_with_a_valid_card(export, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    before = digest(export)
    with FakeHub(TOKEN) as hub:
        receipt = push_export(export, "someone/xlmr-de-focus", private=True, endpoint=hub.url)
        # exists: a new commit
        again = push_export(export, "someone/xlmr-de-focus", private=True, endpoint=hub.url)
    repo = hub.repos["someone/xlmr-de-focus"]
    assert repo.private and len(repo.commits) == 2 and receipt["commit"] and again["repo"] == receipt["repo"]
    assert {p: hashlib.sha256(b).hexdigest() for p, b in repo.files.items()} == before
    assert sorted(receipt["files"]) == sorted(before)
    assert "POST /api/validate-yaml" in hub.requests  # the card's metadata passed the hub's check
    data = ModelCard(repo.files["README.md"].decode()).data
    assert (data.base_model, data.license, data.language) == ("FacebookAI/xlm-roberta-base", "mit", ["de"])
    assert data.eval_results[0].metric_value == 4.0
    assert digest(export) == before  # the export is read, never changed


@pytest.mark.parametrize("token,repo,error,message", [
    (None, "someone/model", PermissionError, "no token in $HF_TOKEN"),
    (TOKEN, "someone/bad name", ValueError, "repository name 'someone/bad name'"),
    (TOKEN, "a/b/c", ValueError, "repository name 'a/b/c'"),
    (TOKEN, "just-a-name", ValueError, "write it as <user or organization>/<name>"),
])
def test_a_push_without_a_token_or_with_a_bad_name_sends_nothing(export, monkeypatch, token, repo, error,
                                                                 message):
    if token:
        monkeypatch.setenv("HF_TOKEN", token)
    else:
        monkeypatch.delenv("HF_TOKEN", raising=False)
    with FakeHub(TOKEN) as hub, pytest.raises(error, match=message.replace("$", r"\$")):
        push_export(export, repo, endpoint=hub.url)
    assert hub.requests == [] and hub.repos == {}


def test_an_unfinished_export_is_refused_and_a_rejected_token_leaves_the_folder(export, monkeypatch,
                                                                                tmp_path):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with FakeHub(TOKEN) as hub, pytest.raises(FileNotFoundError, match="is not a finished export"):
        push_export(tmp_path / "nothing", "someone/model", endpoint=hub.url)
    assert hub.requests == []
    before = digest(export)
    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    with FakeHub(TOKEN) as hub, pytest.raises(Exception, match="401|Invalid credentials"):
        push_export(export, "someone/model", endpoint=hub.url)
    assert hub.repos == {} and digest(export) == before


def test_a_card_the_hub_would_refuse_stops_the_push_before_a_commit(export, monkeypatch):
    """The hub checks a README's metadata before the commit (huggingface_hub calls /api/validate-yaml): a
    license that is no hub identifier stops the push, and nothing is committed."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    card = (export / "README.md").read_text()
    (export / "README.md").write_text(card.replace("license: mit", "license: MIT License"))
    with FakeHub(TOKEN) as hub, pytest.raises(ValueError, match="license"):
        push_export(export, "someone/model", endpoint=hub.url)
    assert not any(r.startswith("POST /api/models/") and "/commit/" in r for r in hub.requests)


def test_offline_mode_stops_a_push_before_anything_is_sent(export, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with FakeHub(TOKEN) as hub, pytest.raises(PermissionError, match="HF_HUB_OFFLINE is set"):
        push_export(export, "someone/model", endpoint=hub.url)
    assert hub.requests == []


def test_the_card_of_a_push_carries_the_lm_eval_scores_and_the_folder_keeps_its_own(export, monkeypatch):
    """With benchmark scores (rule push_export's ``scores`` input), the pushed README's model-index holds them
    besides the init-time loss; the export folder's card stays as the export wrote it."""
    import pandas as pd

    from vocab_transfer.export import card_with_scores

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    before = digest(export)
    scores = pd.DataFrame({"task": ["belebele_swh_Latn", "arc_sw"], "metric": ["acc", "acc_norm"],
                           "value": [0.41, float("nan")], "num_fewshot": [0, 0], "samples": [900, 100]})
    with FakeHub(TOKEN) as hub:
        push_export(export, "someone/model", endpoint=hub.url, card=card_with_scores(export, scores))
    results = ModelCard(hub.repos["someone/model"].files["README.md"].decode()).data.eval_results
    assert ([(r.dataset_type, r.metric_type, r.metric_value) for r in results][-1]
            == ("belebele_swh_Latn", "acc", 0.41))
    assert results[0].metric_type == "loss" and len(results) == 3  # loss, perplexity, belebele (NaN left out)
    assert digest(export) == before and set(hub.repos["someone/model"].files) == set(before)
