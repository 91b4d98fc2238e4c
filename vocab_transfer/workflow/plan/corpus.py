"""Input and params functions of rules/corpus.smk, tokenizer.smk, shards.smk: corpora, target tokenizers
(trained, pretrained, or like a source's) and their token shards."""

from __future__ import annotations

import os
from types import SimpleNamespace

from .. import paths
from ..model import SourceTokenizer
from .base import PlanBase, canonical


class CorpusPlan(PlanBase):
    """The input and params functions of rules/corpus.smk, tokenizer.smk and shards.smk."""

    def corpus_spec(self, wildcards):
        return canonical(self.config["corpora"][wildcards.lang])

    def pretrained_tokenizer(self, lang):
        """The existing tokenizer a language uses instead of a trained one: a folder or hub id, or None."""
        spec = self.cfg.tokenizer.pretrained.get(lang)
        if isinstance(spec, SourceTokenizer):  # the source model's own tokenizer (saved with the model)
            return self.source_model_dir(SimpleNamespace(source=spec.source))
        return spec

    def pretrained_tokenizer_of(self, wildcards):
        return self.pretrained_tokenizer(wildcards.lang)

    def pretrained_tokenizer_dir(self, wildcards):
        """Input of train_tokenizer: the folder of a local/pretrained-here tokenizer (a hub id is fetched by the job)."""
        path = self.pretrained_tokenizer(wildcards.lang)
        return [] if path is None or not (path.startswith((paths.RESULTS + "/", paths.RESOURCES + "/"))
                                          or os.path.isdir(path)) else path

    def like_tokenizer_dir(self, wildcards):
        """Input of train_tokenizer: the source tokenizer whose family and layout a trained one copies
        (``tokenizer.like``); none for a language with a ``tokenizer.pretrained`` entry."""
        like = self.cfg.tokenizer.like
        if like is None or wildcards.lang in self.cfg.tokenizer.pretrained:
            return []
        return self.source_tokenizer_dir(SimpleNamespace(source=like))
