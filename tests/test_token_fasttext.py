import pytest
import torch

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
