"""Text and what is derived from it, streaming (``docs/data.md``): corpus sources (:mod:`.sources`), ingestion
(:mod:`.corpus`, exact dedup in :mod:`.dedup`), tokenizers (:mod:`.tokenizer`), token shards (:mod:`.shards`),
token- and word-level fastText (:mod:`.token_fasttext`, :mod:`.word_vectors`), bilingual dictionaries
(:mod:`.dictionary`) and downstream task data (:mod:`.tasks`)."""
