"""Input and params functions of rules/corpus.smk, tokenizer.smk, shards.smk: corpora, target tokenizers
(trained, pretrained, or like a source's) and their token shards."""

from __future__ import annotations

import os
from types import SimpleNamespace

from ...data.fetch import needs_fetch
from ..model import SourceTokenizer
from ..views import followed_sources
from .base import PlanBase, canonical


def hub_folder(repo: str) -> str:
    """A hub id as one folder name (``dbmdz/bert-base-german-cased`` -> ``dbmdz--bert-base-german-cased``)."""
    return repo.replace("/", "--")


class CorpusPlan(PlanBase):
    def corpus_spec(self, wildcards):
        """The corpus's entry as written, without ``language`` and ``fetch`` (they do not change the text)."""
        return canonical({k: v for k, v in self.config["corpora"][wildcards.corpus].items()
                          if k not in ("language", "fetch")})

    def corpus_fetched(self, wildcards):
        """Input of prepare_corpus: the hub corpus's fetched files (rule download_corpus), or none."""
        spec = self.config["corpora"][wildcards.corpus]
        return self.paths.downloaded_corpus(wildcards.corpus) if needs_fetch(spec) else []

    def corpus_cap(self, wildcards):
        """The bytes of text the corpus job keeps at most (the corpus's ``max_bytes``, else
        ``corpus_filter``'s): what a fetch stops at."""
        return self.cfg.corpora[wildcards.corpus].max_bytes or self.cfg.corpus_filter.max_bytes

    def target_corpus(self, wildcards):
        """A target's corpus split (``{target}``, ``{split}``; ``train`` without one)."""
        return self.paths.corpus(self.cfg.target_corpus(wildcards.target),
                                 getattr(wildcards, "split", "train"))

    def target_corpus_stats(self, wildcards):
        return self.paths.corpus_stats(self.cfg.target_corpus(wildcards.target))

    def tokenizer_spec(self, wildcards):
        """The target's tokenizer settings as written: the ``tokenizer`` section with the target's own keys
        over it, without ``pretrained`` and ``like``, which reach the rule as inputs (a change of either
        changes the input: :meth:`pretrained_tokenizer_dir`, :meth:`like_tokenizer_dir`)."""
        written = self.config.get("tokenizer", {}) | self.cfg.target(wildcards.target).tokenizer
        spec = {k: v for k, v in written.items() if k not in ("pretrained", "like")}
        follow = followed_sources(self.cfg, wildcards.target)
        # the job decides between Unigram and the one decoder source's layout (follow_tokenizer_dirs)
        if follow:
            spec["follow"] = {"sources": follow, "of": self.sources, "target": wildcards.target}
        return canonical(spec)

    def tokenizer_threads(self, wildcards):
        return self.cfg.target_tokenizer(wildcards.target).threads

    def pretrained_tokenizer(self, target):
        """The existing tokenizer a target uses instead of a trained one: a folder (a hub id's: fetched into
        resources/tokenizers/ by rule download_tokenizer), or None."""
        spec = self.cfg.tokenizer.pretrained.get(target)
        if isinstance(spec, SourceTokenizer):  # the source model's own tokenizer (saved with the model)
            return self.source_model_dir(SimpleNamespace(source=spec.source))
        return self.paths.downloaded_tokenizer(hub_folder(spec)) if self.is_hub_id(spec) else spec

    def is_hub_id(self, spec) -> bool:
        """Whether a ``tokenizer.pretrained`` value names a hub repository: a string that is neither a folder
        nor a path of the pipeline's own."""
        own = (self.paths.RESULTS + "/", self.paths.RESOURCES + "/")
        return isinstance(spec, str) and not (spec.startswith(own) or os.path.isdir(spec))

    @property
    def hub_tokenizers(self) -> dict[str, str]:
        """The folder name (of downloaded tokenizers) -> hub id of each ``tokenizer.pretrained`` hub id."""
        return {hub_folder(s): s for s in self.cfg.tokenizer.pretrained.values() if self.is_hub_id(s)}

    def tokenizer_hub_id(self, wildcards):
        return self.hub_tokenizers[wildcards.hubtok]

    def pretrained_tokenizer_dir(self, wildcards):
        """Input of train_tokenizer: the existing tokenizer's folder (local, pretrained here or fetched)."""
        return self.pretrained_tokenizer(wildcards.target) or []

    def like_tokenizer_dir(self, wildcards):
        """Input of train_tokenizer: the source tokenizer whose family and layout a trained one copies
        (``tokenizer.like``, or the target's own); none for a target with a ``tokenizer.pretrained`` entry."""
        like = self.cfg.target_tokenizer(wildcards.target).like
        if like is None or wildcards.target in self.cfg.tokenizer.pretrained:
            return []
        return self.source_tokenizer_dir(SimpleNamespace(source=like))

    def follow_tokenizer_dirs(self, wildcards):
        """Input of train_tokenizer: the folders of the sources a tokenizer without ``like`` and ``kind`` may
        follow (:func:`~..views.followed_sources`): the job takes the layout of the decoder among them."""
        return [self.source_model_dir(SimpleNamespace(source=s))
                for s in followed_sources(self.cfg, wildcards.target)]
