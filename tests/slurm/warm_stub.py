"""A trainer stand-in for rule warm_bundled: records where it ran (a child of a warm starter or not, which
SLURM job, which starter allocation, which GPU)."""

import json
import os
import sys

KEYS = ("VOCAB_TRANSFER_WARM_CHILD", "VOCAB_TRANSFER_WARM_ALLOCATION", "SLURM_JOB_ID", "CUDA_VISIBLE_DEVICES")
with open(sys.argv[1], "w") as out:
    json.dump({key: os.environ.get(key) for key in KEYS}, out)
