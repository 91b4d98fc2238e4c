"""How a training job starts its processes: one process, one per GPU of a node, or one per GPU of several nodes.

The rules run a trainer as ``exec <launcher> -m vocab_transfer.training.<trainer> ...``; :func:`launcher_command`
gives the launcher for a config's ``gpus`` (per node) and ``nodes`` (``launcher: auto``):

=====================  ===================================================================================
one GPU or the CPU     ``python``
N GPUs of one node     ``torchrun --standalone --nproc-per-node N`` (its own rendezvous on a free port, so
                       two jobs on one node do not clash)
N GPUs on M nodes      ``python -m vocab_transfer.training.launch --nodes M --gpus-per-node N --``, which
                       inside the SLURM allocation runs one ``torchrun`` per node through ``srun`` with c10d
                       rendezvous at the job's first node (``scontrol show hostnames``) on a free port
                       (:func:`multinode_command`)
=====================  ===================================================================================

The trainers join the processes with :func:`vocab_transfer.training.runtime.init_distributed` (torchrun's
environment, or SLURM's for ``srun`` without torchrun). SLURM's ``--signal=TERM@300`` reaches every process of the
step; each trainer checkpoints and exits, and the resubmitted job resumes.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import socket
import subprocess
import sys


def first_node(nodelist: str) -> str:
    """The first host of a SLURM node list (``gpu[01-04],cpu7`` -> ``gpu01``), as ``scontrol show hostnames``
    would print it first; ``scontrol`` itself where it is installed."""
    if shutil.which("scontrol"):
        out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.split():
            return out.stdout.split()[0]
    head = nodelist.split(",")[0]
    if "[" in head:
        prefix, rest = head.split("[", 1)
        return prefix + rest.rstrip("]").split(",")[0].split("-")[0]
    return head


def node_address(node: str) -> str:
    """An address the other nodes reach ``node`` at: its name where it resolves, else SLURM's ``NodeAddr`` of it
    (clusters whose node names are SLURM aliases)."""
    try:
        socket.getaddrinfo(node, None)
        return node
    except OSError:
        pass
    if shutil.which("scontrol"):
        out = subprocess.run(["scontrol", "-o", "show", "node", node], capture_output=True, text=True).stdout
        for field in out.split():
            if field.startswith("NodeAddr="):
                return field.removeprefix("NodeAddr=")
    return node


def launcher_command(gpus: int, nodes: int = 1, launcher: str = "auto") -> str:
    """The command a rule puts before ``-m vocab_transfer.training.<trainer>``: ``launcher`` itself unless it is
    ``auto``, else the one for ``gpus`` per node on ``nodes`` nodes (see the module's table)."""
    if launcher != "auto":
        return launcher
    if nodes > 1:
        return f"python -m vocab_transfer.training.launch --nodes {nodes} --gpus-per-node {max(gpus, 1)} --"
    if gpus > 1:
        return f"torchrun --standalone --nproc-per-node {gpus}"
    return "python"


def multinode_command(nodes: int, gpus_per_node: int, head: str, port: int, job_id: str, args: list[str]
                      ) -> list[str]:
    """``srun`` of one ``torchrun`` per node (``--ntasks-per-node 1``; each starts ``gpus_per_node`` trainer
    processes) meeting at ``head:port`` (c10d rendezvous, id ``job_id``), running ``python <args>``."""
    return ["srun", f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1", "--kill-on-bad-exit=1",
            "torchrun", f"--nnodes={nodes}", f"--nproc-per-node={gpus_per_node}", "--rdzv-backend=c10d",
            f"--rdzv-endpoint={head}:{port}", f"--rdzv-id={job_id}", *args]


def free_port() -> int:
    """A TCP port nobody listens on here (the job's first node, where the launcher runs)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, required=True, help="nodes of the SLURM allocation to run on")
    p.add_argument("--gpus-per-node", type=int, required=True, help="trainer processes per node (one per GPU)")
    p.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    p.add_argument("args", nargs=argparse.REMAINDER, help="-- -m vocab_transfer.training.<trainer> ...")
    args = p.parse_args(argv)
    rest = args.args[1:] if args.args[:1] == ["--"] else args.args
    if "SLURM_JOB_NODELIST" not in os.environ and not args.dry_run:
        raise SystemExit("launch: multi-node training runs inside a SLURM allocation (SLURM_JOB_NODELIST is unset)")
    head = node_address(first_node(os.environ.get("SLURM_JOB_NODELIST", "localhost")))
    cmd = multinode_command(args.nodes, args.gpus_per_node, head, free_port(), os.environ.get("SLURM_JOB_ID", "0"),
                            rest)
    if args.dry_run:
        print(shlex.join(cmd))
        return
    print(f"launch: {shlex.join(cmd)}", file=sys.stderr, flush=True)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
