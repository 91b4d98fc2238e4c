"""What ``snakemake --report`` shows of a config's tables and figures (the rules' ``report(..., category=,
labels=)``): the paper they belong to (the report's category) and the label that names each of them.

A category holds a paper's tables and figures of every study of a composite that reproduces that paper; its
subcategories are Tables, Figures and Source model (report/workflow.rst). A label is the title, with the
study where the config names one: the report keeps one result per label of a category."""

from __future__ import annotations

import functools
import re

from .base import PlanBase

# "FOCUS Table 2: ...", "UNKs Everywhere Tables 5a-d: ...", "vocab-swap Figure 4 in miniature: ...": the paper
PAPER_OF_TITLE = re.compile(r"^(?P<paper>\S.*?)\s+(?:Tables?|Figures?)\s+\d")
NO_PAPER = "This run"


def paper_of_title(title: str | None) -> str | None:
    """The paper a table's or figure's title names before its number (``"WECHSEL Table 2: ..."`` ->
    ``WECHSEL``); None when it names none."""
    match = PAPER_OF_TITLE.match(title or "")
    return match["paper"] if match else None


class ReportPlan(PlanBase):
    """Categories and labels of the report's tables and figures."""

    @functools.cached_property
    def report_category(self) -> str:
        """The paper the titles of the config's tables and figures name, when they all name one and the same
        (``FOCUS Table 2: ...`` -> FOCUS), else the study's name, else "This run"."""
        titles = [spec.title for spec in [*self.cfg.tables.values(), *self.cfg.figures.values()]]
        papers = {paper_of_title(title) for title in titles}
        if len(papers) == 1 and None not in papers:
            return papers.pop()
        return self.cfg.study or NO_PAPER

    def report_labels(self, kind: str, text: str) -> dict[str, str]:
        """``{kind: text}``, the study's name appended where the config names one (``text`` may name the
        job's wildcards: ``{source}``)."""
        return {kind: f"{text} ({self.cfg.study})" if self.cfg.study else text}

    def paper_table_report_labels(self, wildcards) -> dict[str, str]:
        """A paper table's label: its title, else its name in ``tables``."""
        return self.report_labels("table", self.cfg.tables[wildcards.table].title or wildcards.table)

    def figure_report_labels(self, wildcards) -> dict[str, str]:
        """A paper figure's label: its title (else its name in ``figures``), with the source model where the
        config has several (each draws the figure)."""
        title = self.cfg.figures[wildcards.figure].title or wildcards.figure
        several = len(self.sources) > 1
        return self.report_labels("figure", f"{title}, {wildcards.source}" if several else title)
