"""Input and params functions of rules/fasttext.smk, word_vectors.smk, dictionary.smk: token-level fastText,
word vectors and bilingual dictionaries."""

from __future__ import annotations

import functools
import re

from ...data.dictionary import DICTIONARY_SOURCES
from ...data.token_fasttext import FASTTEXT_PRESETS
from ...data.word_vectors import WORD_VECTOR_SOURCES
from ...methods import Need
from ..views import method_targets
from .base import PlanBase, canonical


class VectorsPlan(PlanBase):
    def fasttext_preset_spec(self, wildcards):
        """The `fasttext` section as written with a preset's keys over it
        (vocab_transfer.data.token_fasttext.FASTTEXT_PRESETS)."""
        return canonical({**self.config.get("fasttext", {}), **FASTTEXT_PRESETS[wildcards.preset]})

    def source_fasttext_shards(self, wildcards):
        """The source-tokenized training split of ``slang``: a corpus of that name (TokAlign reads the source
        tokenizer's vectors on the target's own corpus), else the corpus of that language."""
        slang = wildcards.slang
        corpus = slang if slang in self.cfg.corpora else self.cfg.corpus_of_language(slang)
        return self.paths.source_shards(wildcards.source, corpus, "train")

    @functools.cached_property
    def word_model_languages(self) -> frozenset[str]:
        """Word-vector keys (:meth:`word_key`) whose word-level fastText model (.bin) a method reads (WECHSEL
        ``subwords: fasttext``)."""
        return frozenset(self.word_key(lang) for m in self.method_names
                         if Need.WORD_MODELS in self.method_needs_of(m)
                         for lang in (self.method_option(m, "source_language"),
                                      *map(self.cfg.target_language, method_targets(self.cfg, m))))

    def word_vector_inputs(self, wildcards):
        """The trained fastText model where a method needs it anyway (rule save_word_fasttext_model: the
        vectors are read from it, not trained again), else what it is made of (:meth:`word_model_inputs`)."""
        if wildcards.lang in self.word_model_languages and wildcards.lang not in self.cfg.word_vectors:
            return {"model": self.paths.word_fasttext_model(wildcards.lang)}
        return self.word_model_inputs(wildcards)

    def word_model_inputs(self, wildcards):
        """A pretrained vector file named in config `word_vectors`, else the corpus to train on (``{lang}``: a
        word-vector key, :meth:`word_key`)."""
        spec = self.cfg.word_vectors.get(wildcards.lang)
        if spec is None:
            return {"corpus": self.paths.corpus(self.cfg.corpus_of_language(wildcards.lang), "train")}
        if spec.path:
            return {"pretrained": spec.path}
        return {"pretrained": WORD_VECTOR_SOURCES[spec.source].file(wildcards.lang, self.paths)}

    def word_vector_spec(self, wildcards):
        """Only what this language's vectors depend on: the pretrained spec, or the training settings."""
        pretrained = self.config.get("word_vectors", {}).get(wildcards.lang)
        if pretrained:
            return canonical({"pretrained": pretrained})
        return canonical({"train": self.config.get("word_fasttext", {}), "seed": self.config["seed"]})

    def dictionary_pattern(self, which: str) -> str:
        """The ``slang`` (``which="source"``) or ``lang`` wildcard of rule build_dictionary: the languages of
        this config's `dictionaries` (a pattern that matches nothing where there are none), so that in a
        composite a study's copy of the rule never claims a pair only another study configures."""
        langs = (self.cfg.dictionaries if which == "source"
                 else {t for d in self.cfg.dictionaries.values() for t in d})
        return "|".join(re.escape(x) for x in sorted(langs)) or "(?!)"

    def dictionary_inputs(self, wildcards):
        """Files a dictionary is built from: nothing (freedict: a system package), a file, a MUSE download,
        or both languages' word lists (identical spellings)."""
        spec = self.cfg.dictionaries.get(wildcards.slang, {}).get(wildcards.lang)
        if spec is None:
            raise ValueError(f"no dictionary configured for {wildcards.slang} -> {wildcards.lang} "
                             "(config 'dictionaries')")
        return DICTIONARY_SOURCES[spec.source].inputs(spec, wildcards.slang, wildcards.lang, self.paths,
                                                      lambda lang: self.paths.word_list(self.word_key(lang)))

    def dictionary_params(self, wildcards):
        """The dictionary's entry as written."""
        return canonical(self.config["dictionaries"][wildcards.slang][wildcards.lang])
