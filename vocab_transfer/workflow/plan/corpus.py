"""Input and params functions of rules/corpus.smk, tokenizer.smk, shards.smk: corpora, target tokenizers
(trained, pretrained, or like a source's) and their token shards."""

from __future__ import annotations

import os
from types import SimpleNamespace

from ..model import SourceTokenizer
from .base import PlanBase, canonical


class CorpusPlan(PlanBase):
    """The input and params functions of rules/corpus.smk, tokenizer.smk and shards.smk."""

    def corpus_spec(self, wildcards):
        """The corpus's entry as written, without ``language`` (a name for the text, which does not change it)."""
        return canonical({k: v for k, v in self.config["corpora"][wildcards.corpus].items() if k != "language"})

    def target_corpus(self, wildcards):
        """A target's corpus split (``{target}``, ``{split}``; ``train`` without one)."""
        return self.paths.corpus(self.cfg.target_corpus(wildcards.target), getattr(wildcards, "split", "train"))

    def target_corpus_stats(self, wildcards):
        return self.paths.corpus_stats(self.cfg.target_corpus(wildcards.target))

    def tokenizer_spec(self, wildcards):
        """The target's tokenizer settings as written: the ``tokenizer`` section (without ``pretrained``) with the
        target's own keys over it."""
        written = {k: v for k, v in self.config.get("tokenizer", {}).items() if k != "pretrained"}
        return canonical(written | self.cfg.target(wildcards.target).tokenizer)

    def tokenizer_threads(self, wildcards):
        return self.cfg.target_tokenizer(wildcards.target).threads

    def pretrained_tokenizer(self, target):
        """The existing tokenizer a target uses instead of a trained one: a folder or hub id, or None."""
        spec = self.cfg.tokenizer.pretrained.get(target)
        if isinstance(spec, SourceTokenizer):  # the source model's own tokenizer (saved with the model)
            return self.source_model_dir(SimpleNamespace(source=spec.source))
        return spec

    def pretrained_tokenizer_of(self, wildcards):
        return self.pretrained_tokenizer(wildcards.target)

    def pretrained_tokenizer_dir(self, wildcards):
        """Input of train_tokenizer: the folder of a local/pretrained-here tokenizer (a hub id is fetched by the job)."""
        path = self.pretrained_tokenizer(wildcards.target)
        return [] if path is None or not (path.startswith((self.paths.RESULTS + "/", self.paths.RESOURCES + "/"))
                                          or os.path.isdir(path)) else path

    def like_tokenizer_dir(self, wildcards):
        """Input of train_tokenizer: the source tokenizer whose family and layout a trained one copies
        (``tokenizer.like``, or the target's own); none for a target with a ``tokenizer.pretrained`` entry."""
        like = self.cfg.target_tokenizer(wildcards.target).like
        if like is None or wildcards.target in self.cfg.tokenizer.pretrained:
            return []
        return self.source_tokenizer_dir(SimpleNamespace(source=like))
