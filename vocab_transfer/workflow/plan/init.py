"""Input and params functions of rules/init.smk and overlap.smk: the init_embeddings job of a method (its
parameters and what it reads), the shared factorizations, vocabulary extensions."""

from __future__ import annotations

import json
import re

from ...methods import Need
from ...methods import method_params as with_defaults
from ...methods.extension import extension_count
from ...methods.unks import factorization_spec
from ..needs import InitJob
from ..needs import init_inputs as needs_inputs
from .base import PlanBase, canonical


class InitPlan(PlanBase):
    def method_params(self, wildcards):
        """The method's parameters as a JSON string (a parameter change reruns only that method's jobs)."""
        spec = self.cfg.methods[wildcards.method]
        # the default adds nothing
        head = {} if spec.output_rows == "transfer" else {"output_rows": spec.output_rows}
        # which vectors the artifact was made from
        head |= {"fasttext": spec.fasttext} if spec.fasttext else {}
        return canonical({"kind": spec.kind, **spec.params, **head})

    def refines(self, method) -> bool:
        """Whether a method refines another row's init (Token Distillation): refine_embeddings runs it."""
        return Need.BASE_INIT in self.method_needs_of(method)

    def method_pattern(self, refining: bool) -> str:
        """The methods wildcard of init_embeddings (``refining=False``) or refine_embeddings: the names of its
        methods (a pattern that matches nothing where there are none), so one init artifact has one rule."""
        return "|".join(re.escape(m) for m in self.cfg.methods if self.refines(m) == refining) or "(?!)"

    def refine_gpus(self, wildcards):
        """A refining method with `device: auto` or `cuda` gets a GPU where LAPT jobs get them."""
        on_gpu = self.method_option(wildcards.method, "device") in ("auto", "cuda")
        return 1 if on_gpu and self.cfg.lapt.gpus > 0 else 0

    def init_inputs(self, wildcards):
        """Inputs of init_embeddings: the source model, the target tokenizer, the overlap, and what the method
        needs (vocab_transfer.workflow.needs: the registry the method declares its needs in)."""
        needs = self.method_needs_of(wildcards.method)
        params = with_defaults(*self.method_kind_params(wildcards.method))
        lang = self.cfg.target_language(wildcards.target)
        job = InitJob(wildcards.source, wildcards.target, wildcards.method, params,
                      self.factorization_key(wildcards.method) if Need.FACTORS in needs else None,
                      self.cfg.methods[wildcards.method].fasttext, lang, self.word_key(lang),
                      self.word_key(params["source_language"]) if params.get("source_language") else None,
                      self.cfg.target_corpus(wildcards.target))
        return {"model": self.source_model_dir(wildcards),
                "tokenizer": self.paths.tokenizer(wildcards.target),
                "overlap": self.paths.overlap(wildcards.source, wildcards.target),
                **needs_inputs(job, needs, self.paths)}

    def factorization_params(self, wildcards):
        method = self.factorizations[wildcards.factorization]
        return canonical(factorization_spec(with_defaults(*self.method_kind_params(method))))

    def factorization_gpus(self, wildcards):
        """A factorization with `device: auto` or `cuda` (MF-NEURAL at paper scale) gets a GPU where LAPT jobs
        get them."""
        on_gpu = json.loads(self.factorization_params(wildcards)).get("device") in ("auto", "cuda")
        return 1 if on_gpu and self.cfg.lapt.gpus > 0 else 0

    def extension_selection(self, wildcards):
        """How an extension picks its tokens: ``{"top_tokens": N}`` (FOCUS §3.1) or ``{"new_tokens": N}``."""
        key, n = extension_count(self.method_option(wildcards.method, "top_tokens"),
                                 self.method_option(wildcards.method, "new_tokens"))
        return {key: n}
