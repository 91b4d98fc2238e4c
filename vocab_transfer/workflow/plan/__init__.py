"""What a config plans: every input function and params function of the rules, on one validated config.

``rules/common.smk`` builds one :class:`Plan` from the config and the rules name its methods (``input:
unpack(plan.init_inputs)``, ``params: spec=plan.corpus_spec``); each takes the job's ``wildcards`` (and, where
Snakemake passes it, ``input``) and returns paths from :mod:`vocab_transfer.workflow.paths` or a params value.
Each stage's functions live in the module of its name (``rules/lapt.smk`` -> :mod:`.lapt`), on what every
stage shares (:mod:`.base`). Params values are canonical JSON (:func:`canonical`), so that reordering YAML
keys reruns nothing. The methods' needs and parameter defaults come from the method registry
(:mod:`vocab_transfer.methods`); what the stages compute from the config beyond its keys (a LAPT run's
targets, a figure's runs) from its derived views (:mod:`vocab_transfer.workflow.views`)."""

from __future__ import annotations

import inspect
from types import MappingProxyType

from .base import PlanBase, canonical, hub_spec, shell_option
from .corpus import CorpusPlan
from .eval import EvalPlan
from .export import ExportPlan
from .figures import FiguresPlan
from .finetune import FinetunePlan
from .init import InitPlan
from .lapt import LaptPlan
from .report import ReportPlan
from .source import SourcePlan
from .tables import TablesPlan
from .vectors import VectorsPlan
from .zeroshot import ZeroShotPlan

__all__ = ["Plan", "PlanBase", "canonical", "hub_spec", "shell_option"]


class Plan(SourcePlan, CorpusPlan, VectorsPlan, InitPlan, EvalPlan, LaptPlan, FinetunePlan, ZeroShotPlan,
           TablesPlan, FiguresPlan, ExportPlan, ReportPlan):
    """The jobs a config asks for: the input and params functions of every stage's rules."""


# Snakemake reads an input or params function's parameters on every call (about 30,000 times for the UNKs
# grid). For a bound method inspect.signature builds them anew each time (7% of that dry run); Snakemake takes
# them from the function's `_overwrite_params` instead where it has one
# (snakemake.common.get_function_params), and a bound method shows its function's attributes: the parameters
# after `self`, computed once.
for _cls in Plan.__mro__[:-1]:
    for _fn in vars(_cls).values():
        if inspect.isfunction(_fn):
            _fn.__signature__ = inspect.signature(_fn)
            _fn._overwrite_params = MappingProxyType(dict(list(_fn.__signature__.parameters.items())[1:]))
