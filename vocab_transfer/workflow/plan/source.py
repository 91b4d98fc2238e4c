"""Input and params functions of rules/source.smk: a source model pretrained here (its tokenizer, corpora,
recipe) or downloaded."""

from __future__ import annotations

import re
from types import SimpleNamespace

from .base import PlanBase, canonical, hub_spec


class SourcePlan(PlanBase):
    def pretrain_spec(self, wildcards):
        """The `pretrain` recipe of a source (only sources that are pretrained here have one), as written."""
        return canonical(self.config["sources"][wildcards.source]["pretrain"])

    def pretrain_threads(self, wildcards):
        return self.cfg.sources[wildcards.source].pretrain.training.threads

    def pretrain_tokenizer_threads(self, wildcards):
        return self.cfg.sources[wildcards.source].pretrain.tokenizer.threads

    def source_corpora(self, wildcards):
        """Training corpora of a source pretrained here (its tokenizer's training text)."""
        return [self.paths.corpus(lang, "train")
                for lang in self.cfg.sources[wildcards.source].pretrain.languages]

    def source_pretrain_shards(self, wildcards, split="train"):
        """Its pretraining languages' corpora tokenized with its tokenizer."""
        languages = self.cfg.sources[wildcards.source].pretrain.languages
        return [self.paths.source_shards(wildcards.source, lang, split) for lang in languages]

    def source_pretrain_heldout(self, wildcards):
        return self.source_pretrain_shards(wildcards, split="heldout")

    def hub_source_pattern(self) -> str:
        """The ``source`` wildcard of rule download_source_model: this config's sources downloaded from the
        hub, so that in a composite a study's copy of the rule never claims a source another study defines (a
        pattern that matches nothing where there are none)."""
        hub = [s for s in self.sources
               if self.source_model_dir(SimpleNamespace(source=s)) == self.paths.downloaded_model(s)]
        return "|".join(re.escape(s) for s in hub) or "(?!)"

    def source_hub_spec(self, wildcards):
        """``<hub id>`` or ``<hub id>@<revision>`` (hub ids have no ``@``): a param, so a new revision
        downloads again, and a config without one plans the same params as before revisions existed."""
        source = self.cfg.sources[wildcards.source]
        return hub_spec(source.model, source.revision)
