import pytest
import torch
import yaml

from vocab_transfer.data.token_fasttext import train_token_fasttext
from vocab_transfer.source_model import TokenizerModelMismatch, check_tokenizer_matches


@pytest.fixture(scope="module")
def vectors(swahili_verses, sw_tokenizer):
    kw = dict(dim=8, min_count=5, epochs=1, threads=1, seed=3)
    return [train_token_fasttext(swahili_verses[:1500], sw_tokenizer, **kw) for _ in range(2)]


def test_vectors_exist_exactly_for_frequent_non_special_tokens(vectors, sw_tokenizer):
    tv = vectors[0]
    assert tv.vectors.shape == (len(sw_tokenizer), 8)
    frequent = tv.counts >= 5
    frequent[sw_tokenizer.all_special_ids] = False
    assert torch.equal(tv.has_vector, frequent)
    assert (tv.vectors[~tv.has_vector] == 0).all() and (tv.vectors[tv.has_vector].norm(dim=1) > 0).all()


def test_single_thread_fasttext_is_bit_identical(vectors):
    a, b = vectors
    assert torch.equal(a.vectors, b.vectors) and torch.equal(a.counts, b.counts)


def test_tokenizer_embedding_mismatch():
    check_tokenizer_matches(100, 100, name="m")
    check_tokenizer_matches(100, 128, name="m", allow_padded_embeddings=True)
    with pytest.raises(TokenizerModelMismatch, match="101 tokens but .* 100 rows"):
        check_tokenizer_matches(101, 100, name="m", allow_padded_embeddings=True)
    with pytest.raises(TokenizerModelMismatch, match="allow_padded_embeddings"):
        check_tokenizer_matches(100, 128, name="m")


def test_deepfocus_preset_is_its_own_artifact_and_recipe(swahili_verses, sw_tokenizer):
    """A FOCUS row's ``fasttext: deepfocus`` reads vectors trained with CBOW and 10 negatives (the authors'
    package) from their own path; without it, the `fasttext` section as configured (the paper's skipgram, 5
    negatives)."""
    import json
    from types import SimpleNamespace

    from vocab_transfer.data.token_fasttext import FASTTEXT_PRESETS
    from vocab_transfer.methods import method_needs
    from vocab_transfer.workflow import paths
    from vocab_transfer.workflow.config import ConfigError, check_config
    from vocab_transfer.workflow.model import FastText
    from vocab_transfer.workflow.needs import InitJob, Need, init_inputs
    from vocab_transfer.workflow.plan import Plan

    assert FASTTEXT_PRESETS["deepfocus"] == {"model": "cbow", "neg": 10}
    assert FastText().model == "skipgram" and FastText().neg == 5
    needs = method_needs("focus", {})
    job = InitJob("src", "sw", "focus_deepfocus", {}, fasttext="deepfocus")
    assert Need.TOKEN_VECTORS in needs
    assert init_inputs(job, needs)["vectors"] == paths.fasttext_vectors("sw", "deepfocus") \
        == "results/fasttext/sw/deepfocus/vectors.safetensors"
    assert (init_inputs(InitJob("src", "sw", "focus", {}), needs)["vectors"]
            == "results/fasttext/sw/vectors.safetensors")
    plan = SimpleNamespace(config={"fasttext": {"dim": 8, "model": "skipgram"}})
    spec = FastText.parse(json.loads(Plan.fasttext_preset_spec(plan, SimpleNamespace(preset="deepfocus"))))
    assert (spec.dim, spec.model, spec.neg) == (8, "cbow", 10)
    config = yaml.safe_load(open("tests/data/tiny_config.yaml"))
    config["methods"]["focus_word_deepfocus"] = {"kind": "focus", "aux": "word_fasttext",
                                                 "fasttext": "deepfocus"}
    with pytest.raises(ConfigError,
                       match="focus_word_deepfocus.fasttext: a token-level fastText recipe applies"):
        check_config(config)
    kw = dict(dim=8, min_count=5, epochs=1, threads=1, seed=3)
    cbow = train_token_fasttext(swahili_verses[:500], sw_tokenizer, model="cbow", neg=10, **kw)
    skip = train_token_fasttext(swahili_verses[:500], sw_tokenizer, **kw)
    assert torch.equal(cbow.has_vector, skip.has_vector) and not torch.equal(cbow.vectors, skip.vectors)
