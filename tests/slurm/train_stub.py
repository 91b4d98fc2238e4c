"""Stand-in for a long, resumable training job (like LAPT) for tests/slurm/Snakefile.

It "trains" by sleeping for longer than its SLURM time limit. On SIGTERM (sent ahead of the limit
by `--signal=TERM@<seconds>` in slurm_extra, or by SLURM at the limit or on preemption) it writes
a checkpoint, atomically, and exits non-zero, so Snakemake resubmits the job (`--retries`). A run
that finds the checkpoint resumes from it and finishes at once.
"""

import argparse
import os
import signal
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checkpoint", type=Path, required=True, help="checkpoint file (not an output)")
    parser.add_argument("--output", type=Path, required=True, help="written when training finishes")
    parser.add_argument("--seconds", type=float, default=600.0, help="training time without interruption")
    args = parser.parse_args()
    started = time.monotonic()
    job_id = os.environ.get("SLURM_JOB_ID", "unset")

    if args.checkpoint.exists():
        args.output.write_text(f"resumed_by={job_id} {args.checkpoint.read_text()}")
        return 0

    def save_checkpoint(signum, frame):
        args.checkpoint.parent.mkdir(parents=True, exist_ok=True)
        partial = args.checkpoint.with_name(args.checkpoint.name + ".partial")
        elapsed = time.monotonic() - started
        partial.write_text(
            f"signal={signal.Signals(signum).name} elapsed_s={elapsed:.0f} checkpointed_by={job_id}"
            f" gpus={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}\n"
        )
        partial.replace(args.checkpoint)
        print(f"{signal.Signals(signum).name} after {elapsed:.0f} s: checkpoint written", file=sys.stderr)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, save_checkpoint)
    time.sleep(args.seconds)
    args.output.write_text(f"finished_by={job_id} without interruption\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
