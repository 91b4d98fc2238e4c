"""How a training job starts its processes: one process, one per GPU of a node, or per GPU of several nodes.

The rules run a trainer as ``exec <launcher> -m vocab_transfer.training.<trainer> ...``; :func:`launcher_args`
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

A config may name its launcher instead: a program of :data:`LAUNCHERS` alone (``python``) or a list of
arguments that starts with one (``[torchrun, --standalone, --nproc-per-node, "2"]``), each an option or its
value (:data:`LAUNCHER_ARG`: no space, quote, ``$``, ``;`` or other shell syntax). :func:`launcher_args`
refuses anything else at parse time; :func:`launcher_command` quotes the arguments for the rule's shell.

The trainers join the processes with :func:`vocab_transfer.training.runtime.init_distributed` (torchrun's
environment, or SLURM's for ``srun`` without torchrun). SLURM's ``--signal=TERM@300`` reaches every process of
the step; each trainer checkpoints and exits, and the resubmitted job resumes.

GPU claims: a SLURM job that runs a bundle of GPU jobs (a group job, vocab_transfer/workflow/bundles.py) holds
the GPUs of all of them, and each of its jobs sees them all (``CUDA_VISIBLE_DEVICES``). So every GPU rule's
command starts ``exec python -m vocab_transfer.training.launch --claim <its GPUs> --benchmark <its file> --
<launcher> -m ...``, and a workflow script claims its GPUs in :func:`vocab_transfer.workflow.job.setup_job`,
both with :func:`claim_gpus`.

Benchmark files: with ``--benchmark FILE`` the launcher stays while the trainer runs (in a child of the job's
warm starter, :mod:`vocab_transfer.warm`, or as its own child, :func:`run_measured`) and writes the job's
benchmark file in Snakemake's columns before it exits with the trainer's status (:func:`claim_and_exec`).
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import MutableMapping

from .. import warm


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
    """An address the other nodes reach ``node`` at: its name where it resolves, else SLURM's ``NodeAddr`` of
    it (clusters whose node names are SLURM aliases)."""
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


#: The programs a configured launcher may start with (``accelerate`` as ``accelerate launch``).
LAUNCHERS = ("python", "python3", "torchrun", "srun", "accelerate")
#: An argument of a configured launcher: an option or its value (``4``, ``--rdzv-endpoint=host:29500``).
LAUNCHER_ARG = r"[A-Za-z0-9_.,:=/@%+-]+"


def launcher_args(gpus: int, nodes: int = 1, launcher: str | list[str] = "auto") -> list[str]:
    """The arguments a rule puts before ``-m vocab_transfer.training.<trainer>``: for ``auto``, those of the
    module's table for ``gpus`` per node on ``nodes`` nodes; else ``launcher``, checked (ValueError)."""
    if launcher == "auto":
        if nodes > 1:
            return ["python", "-m", "vocab_transfer.training.launch", "--nodes", str(nodes),
                    "--gpus-per-node", str(max(gpus, 1)), "--"]
        if gpus > 1:
            return ["torchrun", "--standalone", "--nproc-per-node", str(gpus)]
        return ["python"]
    known = f"auto, or one of {list(LAUNCHERS)} alone or as the first of a list of arguments"
    if isinstance(launcher, str):
        if launcher not in LAUNCHERS:
            words = launcher.split()
            hint = (f"; write a launcher with arguments as a list: {words}"
                    if len(words) > 1 and words[0] in LAUNCHERS else "")
            raise ValueError(f"{launcher!r} is not a launcher: give {known}{hint}")
        launcher = [launcher]
    if not isinstance(launcher, list) or not launcher or not all(isinstance(a, str) for a in launcher):
        raise ValueError(f"{launcher!r} is not a launcher: give {known}")
    if launcher[0] not in LAUNCHERS:
        raise ValueError(f"{launcher!r} starts with {launcher[0]!r}, which is not a known "
                         f"launcher: give {known}")
    if launcher[0] == "accelerate" and launcher[1:2] != ["launch"]:
        raise ValueError(f"{launcher!r}: accelerate starts a trainer as 'accelerate launch'")
    if bad := [a for a in launcher if not re.fullmatch(LAUNCHER_ARG, a)]:
        raise ValueError(f"{launcher!r}: {bad} are not options or values (letters, "
                         "digits and _.,:=/@%+- only)")
    return list(launcher)


def launcher_command(gpus: int, nodes: int = 1, launcher: str | list[str] = "auto") -> str:
    """:func:`launcher_args` as the words of a shell command, each quoted where it needs it."""
    return shlex.join(launcher_args(gpus, nodes, launcher))


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


#: Lock files (and so the GPUs) this process holds: open while it lives, and inherited by what it ``exec``s.
_CLAIMED: list[int] = []


def claim_gpus(count: int, environ: MutableMapping[str, str] = os.environ, folder: str | None = None
               ) -> list[str] | None:
    """Take ``count`` GPUs of a SLURM allocation that runs several GPU jobs side by side: the first of
    ``CUDA_VISIBLE_DEVICES`` whose lock file ``<gpu>.lock`` (in ``folder``, else
    ``${TMPDIR:-/tmp}/vocab-transfer-gpus-<job id>``) this process gets an exclusive ``flock`` on. The locks
    stay held for as long as the process and what it ``exec``s or starts live (:data:`_CLAIMED`, inheritable),
    and ``environ``'s ``CUDA_VISIBLE_DEVICES`` becomes the claimed GPUs. Returns them, or None where there is
    nothing to share: no SLURM job, a job on several nodes, no GPU asked for, no more GPUs visible than asked
    for. Fewer free GPUs than ``count`` is an error (:class:`RuntimeError`): the bundle asked for less than
    its jobs need. No torch here: the claim comes before anything initializes CUDA."""
    visible = [gpu.strip() for gpu in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if gpu.strip()]
    job_id = environ.get("SLURM_JOB_ID")
    nodes = int(environ.get("SLURM_JOB_NUM_NODES") or 1)
    if count <= 0 or not job_id or nodes > 1 or len(visible) <= count:
        return None
    folder = folder or os.path.join(environ.get("TMPDIR") or tempfile.gettempdir(),
                                    f"vocab-transfer-gpus-{job_id}")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    claimed: dict[str, int] = {}  # GPU -> its lock file's descriptor
    for gpu in visible:
        fd = os.open(os.path.join(folder, re.sub(r"[^A-Za-z0-9_.-]", "_", gpu) + ".lock"),
                     os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        os.set_inheritable(fd, True)
        claimed[gpu] = fd
        if len(claimed) == count:
            break
    if len(claimed) < count:
        for fd in claimed.values():
            os.close(fd)  # releases its lock
        raise RuntimeError(f"launch: {count} GPU(s) asked for, but only {len(claimed)} of "
                           f"CUDA_VISIBLE_DEVICES={','.join(visible)} are free in SLURM job {job_id} "
                           f"(locks in {folder}): the bundle's jobs ask for more GPUs than it has")
    _CLAIMED.extend(claimed.values())
    environ["CUDA_VISIBLE_DEVICES"] = ",".join(claimed)
    return list(claimed)


def claim_and_exec(count: int, command: list[str], benchmark: str | None = None) -> None:
    """:func:`claim_gpus` ``count`` GPUs, log them, and ``exec`` ``command`` (SLURM's signals reach it; the
    locks go with it). With ``benchmark``, this process stays, holding the locks, runs ``command`` (in a child
    of the warm starter where it is ``python -m <module>``, :func:`python_module`; else :func:`run_measured`)
    and writes the benchmark file (:data:`BENCHMARK_COLUMNS`) before it exits with the command's status."""
    if not command:
        raise SystemExit("launch: --claim needs a command after --")
    started = time.time()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    try:
        claimed = claim_gpus(count)
    except RuntimeError as err:
        raise SystemExit(str(err)) from None
    if claimed is not None:
        print(f"launch: claimed GPU(s) {','.join(claimed)} of {visible} in SLURM job "
              f"{os.environ['SLURM_JOB_ID']}", file=sys.stderr, flush=True)
    if not benchmark:
        os.execvp(command[0], command)
    module = python_module(command)
    peaks = _Peaks()
    result = warm.run_module(module[0], module[1], on_start=peaks.follow) if module else None
    if result is not None:
        print(f"launch: {module[0]} ran in a child of the warm starter (vocab_transfer/warm.py)",
              file=sys.stderr, flush=True)
    else:
        result = run_measured(command, peaks)
    status, (cpu, rss) = result
    peaks.stop()
    write_benchmark(benchmark, time.time() - started, cpu, max(rss, peaks.rss), peaks)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def run_measured(command: list[str], peaks: _Peaks) -> tuple[int, tuple[float, float]]:
    """Run ``command`` as a child of this process, sampled by ``peaks``; its exit status (128 + N for signal
    N) and ``(cpu_seconds, peak_rss_mb)`` of it and its descendants (``wait4``). Inside a SLURM job, SLURM
    signals every process of the job step (``--signal``, the time limit, ``scancel``), the command too, and
    this process only outlives them to write the benchmark file; elsewhere the command runs in a session of
    its own and gets SIGINT, SIGTERM, SIGHUP and SIGUSR1 (Ctrl-C, Snakemake stopping the job) from this
    process, once each (a second SIGTERM would cut torchrun's shutdown of its workers short)."""
    in_slurm = bool(os.environ.get("SLURM_JOB_ID"))
    child: list[subprocess.Popen] = []

    def forward(signum, _frame) -> None:
        if child and not in_slurm:  # by pid: Popen.send_signal would reap a child that just exited, and the
            warm._kill(child[0].pid, signum)  # wait4 below would lose its status and usage

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
        signal.signal(sig, forward)  # a handler, not SIG_IGN: the command starts with the default ones
    child.append(subprocess.Popen(command, start_new_session=not in_slurm))
    peaks.follow(child[0].pid)
    _pid, status, usage = os.wait4(child[0].pid, 0)
    child[0].returncode = code = os.waitstatus_to_exitcode(status)
    return (code if code >= 0 else 128 - code), (usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


#: The columns of a benchmark file, as Snakemake's ``benchmark:`` writes them: seconds, the same as
#: h:m:s, peak resident, virtual, unique and proportional memory (MB), MB read and written, mean CPU load
#: (percent of one core) and CPU seconds.
BENCHMARK_COLUMNS = ("s", "h:m:s", "max_rss", "max_vms", "max_uss", "max_pss", "io_in", "io_out", "mean_load",
                     "cpu_time")


def python_module(command: list[str]) -> tuple[str, list[str]] | None:
    """``(module, args)`` of a ``python -m module args...`` command (``python``, ``python3`` or this
    interpreter), else None: only such a command can run in a child of a warm starter (not ``torchrun``)."""
    if len(command) >= 3 and command[1] == "-m" and (
            command[0] in ("python", "python3") or command[0] == sys.executable):
        return command[2], command[3:]
    return None


class _Peaks:
    """Peak memory (MB) and I/O of a process and its descendants, sampled every half second by a thread
    (:meth:`follow`), as Snakemake's benchmark samples a job (CPU seconds come from ``wait4``)."""

    def __init__(self):
        self.rss = self.vms = self.uss = self.pss = self.io_in = self.io_out = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self, pid: int, full: bool) -> bool:
        """One sample of ``pid``'s tree (``full``: unique and proportional memory too, which reads every
        mapping); False once ``pid`` is gone."""
        import psutil

        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return False
        total = dict.fromkeys(("rss", "vms", "uss", "pss", "io_in", "io_out"), 0.0)  # bytes, summed
        for proc in procs:
            try:
                with proc.oneshot():
                    mem = proc.memory_info()
                    total["rss"] += mem.rss
                    total["vms"] += mem.vms
                    if full:
                        info = proc.memory_full_info()
                        total["uss"] += info.uss
                        total["pss"] += getattr(info, "pss", 0)
                    io = proc.io_counters()
                    total["io_in"] += io.read_bytes
                    total["io_out"] += io.write_bytes
            except (psutil.Error, AttributeError):
                continue
        for key, value in total.items():
            setattr(self, key, max(getattr(self, key), value / (1024 * 1024)))
        return True

    def follow(self, pid: int) -> None:
        """Sample ``pid``'s tree in a thread until :meth:`stop`."""
        def run() -> None:
            n = 0
            while not self._stop.is_set() and self.sample(pid, full=n % 10 == 1):
                n += 1
                self._stop.wait(0.5)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def write_benchmark(path: str, seconds: float, cpu: float, rss: float, peaks: _Peaks) -> None:
    """A benchmark file with :data:`BENCHMARK_COLUMNS` (one row), written whole (a temporary file renamed)."""
    values = [f"{seconds:.4f}", str(datetime.timedelta(seconds=int(seconds))), f"{rss:.2f}",
              f"{peaks.vms:.2f}", f"{peaks.uss:.2f}", f"{peaks.pss:.2f}", f"{peaks.io_in:.2f}",
              f"{peaks.io_out:.2f}", f"{100 * cpu / seconds if seconds > 0 else 0:.2f}", f"{cpu:.2f}"]
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".benchmark-", suffix=".tmp")
    umask = os.umask(0)  # read as io._umask does, not imported from io: the launcher starts fast without it
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # as an open() would create it, not mkstemp's 0600
    with os.fdopen(fd, "w") as out:
        out.write("\t".join(BENCHMARK_COLUMNS) + "\n" + "\t".join(values) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--claim", type=int, metavar="N",
                   help="claim N of the allocation's GPUs (claim_gpus), then exec the command after --")
    p.add_argument("--nodes", type=int, help="nodes of the SLURM allocation to run on")
    p.add_argument("--gpus-per-node", type=int, help="trainer processes per node (one per GPU)")
    p.add_argument("--benchmark", metavar="FILE",
                   help="with --claim: write the job's benchmark file (time, CPU, peak memory) here")
    p.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    p.add_argument("args", nargs=argparse.REMAINDER, help="-- -m vocab_transfer.training.<trainer> ...")
    args = p.parse_args(argv)
    rest = args.args[1:] if args.args[:1] == ["--"] else args.args
    if args.claim is not None:
        claim_and_exec(args.claim, rest, args.benchmark)
        return
    if args.nodes is None or args.gpus_per_node is None:
        p.error("give --nodes and --gpus-per-node (multi-node training), or --claim N -- <command>")
    if "SLURM_JOB_NODELIST" not in os.environ and not args.dry_run:
        raise SystemExit("launch: multi-node training runs inside a SLURM allocation "
                         "(SLURM_JOB_NODELIST is unset)")
    head = node_address(first_node(os.environ.get("SLURM_JOB_NODELIST", "localhost")))
    cmd = multinode_command(args.nodes, args.gpus_per_node, head, free_port(),
                            os.environ.get("SLURM_JOB_ID", "0"), rest)
    if args.dry_run:
        print(shlex.join(cmd))
        return
    print(f"launch: {shlex.join(cmd)}", file=sys.stderr, flush=True)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
