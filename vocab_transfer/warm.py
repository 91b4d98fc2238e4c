"""Warm job starts for the jobs that run on this machine: one process imports torch, transformers, pandas and
the pipeline once, and every such job of the run is forked from it instead of importing them again.

Every job is a fresh Python process, and on 2 CPU cores its imports cost 2-5 s of CPU (torch about 1.5 s,
transformers' model code 3 s more), more than many jobs' work: the demo runs about 280 jobs. When Snakemake
runs jobs on this machine (:func:`wanted`: every job of a local run, the local rules of a cluster run, such as
its tables and figures on the login node), the workflow starts ``python -m vocab_transfer.warm`` beside it
(:func:`start`), which imports :data:`PRELOAD` and listens on an abstract Unix socket named in :data:`ENV`.
Each workflow script calls :func:`handoff` first thing, before its other imports (importing the package does
nothing of the kind): it sends the script's path, arguments, working directory, environment and standard
streams to the starter, which forks a child that runs the script as ``__main__`` with them. The job process
waits for the child, passes it its signals, and exits with its status; the child kills itself when the job
process goes away (Snakemake killed the job). Anything that goes wrong before the child starts (no starter,
a starter still importing that dies) falls back to running the script in the job process itself.

The child is a fresh process for the job's purposes: its own working directory, environment and file
descriptors, and no state from earlier jobs (each is forked from the starter, which never runs a job). The
starter imports modules only, starts no thread and runs no torch operation, so OpenMP's thread pool is first
created in the child with the job's thread count. A forked job logs at exit a peak memory that counts the
starter's modules it shares (``workflow/job.py``).

Snakemake's ``benchmark:`` samples the job process and its descendants (psutil) while the job runs; a child
of the starter is none of them, so its memory and CPU would be missing from the file. The job of a rule with
a ``benchmark:`` file is therefore never handed off (:func:`benchmarked`): it imports for itself, and its file
has its real time, memory and CPU, start-up included.

The trainers (LAPT, fine-tuning, zero-shot transfer) write their benchmark files themselves instead: their
launcher (``training/launch.py --claim N --benchmark FILE``) hands ``-m <trainer>`` to the starter
(:func:`run_module`), or without one runs it as its own child, and writes the child's time, CPU and peak
memory. A SLURM job that runs a bundle of two or more trainer jobs starts a starter of its own inside its
allocation (``workflow/onstart.py: start_bundle_starter``); a SLURM job hands off only to a starter of its
own allocation (:func:`available`), so it never leaves the limits SLURM set for it.

``VOCAB_TRANSFER_WARM=0`` turns warm starts off for a run (every job imports for itself, as on a cluster).
"""

from __future__ import annotations

import array
import atexit
import contextlib
import gc
import importlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import traceback
import uuid

ENV = "VOCAB_TRANSFER_WARM"  # the starter's socket name; "0" (set by a user) turns warm starts off
#: The SLURM job the starter runs in ("" outside any). A SLURM job inherits the login node's starter name, and
#: on a single-node SLURM that socket is reachable: a job forked there would leave its job's limits.
ALLOCATION = "VOCAB_TRANSFER_WARM_ALLOCATION"
IN_CHILD = "VOCAB_TRANSFER_WARM_CHILD"  # set in a forked job: handoff() returns at once there
PRELOAD = (  # what the workflow scripts import, heaviest first; a module that fails to import is skipped
    "torch", "transformers", "transformers.modeling_utils", "transformers.models.auto.modeling_auto",
    "transformers.models.xlm_roberta.modeling_xlm_roberta", "pandas", "pyarrow.parquet", "safetensors.torch",
    "tokenizers", "sentencepiece", "fasttext", "scipy.sparse", "matplotlib.pyplot", "snakemake.iocontainers",
    "vocab_transfer.init", "vocab_transfer.source_model", "vocab_transfer.io", "vocab_transfer.artifacts",
    "vocab_transfer.data.tokenizer", "vocab_transfer.data.shards", "vocab_transfer.data.corpus",
    "vocab_transfer.data.token_fasttext", "vocab_transfer.data.tasks", "vocab_transfer.eval.mlm",
    "vocab_transfer.eval.probe", "vocab_transfer.eval.correlation", "vocab_transfer.methods",
    "vocab_transfer.report.tables", "vocab_transfer.report.plots", "vocab_transfer.workflow.job",
    "vocab_transfer.training.lapt", "vocab_transfer.training.finetune", "vocab_transfer.training.zeroshot",
    "transformers.models.bert.modeling_bert", "transformers.models.roberta.modeling_roberta",
    "transformers.models.gpt2.modeling_gpt2", "transformers.models.llama.modeling_llama",
    "transformers.models.mistral.modeling_mistral",
)
_MAX_REQUEST = 1 << 22  # bytes: the script path, argv, cwd and environment as JSON


def wanted(workflow) -> bool:
    """Whether a Snakemake run may start a warm starter: it runs jobs on this machine, for real (no
    ``--dry-run``), in this Python environment (no ``--sdm conda`` or ``apptainer``), and is no Snakemake
    inside a cluster job."""
    deployment = getattr(getattr(workflow, "deployment_settings", None), "deployment_method", None)
    return bool(os.environ.get(ENV, "") != "0" and not os.environ.get(IN_CHILD) and not workflow.dryrun
                and not workflow.remote_exec and not deployment and sys.platform.startswith("linux"))


def start() -> subprocess.Popen:
    """Start the starter for this process's jobs: it listens at once and imports :data:`PRELOAD` (a job that
    connects meanwhile waits); it exits when this process does (its standard input closes)."""
    global _starter
    if _starter is None:
        name = f"vocab-transfer-warm-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        _starter = subprocess.Popen([sys.executable, "-m", "vocab_transfer.warm", name],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, close_fds=True)
        os.environ[ENV] = name
        os.environ[ALLOCATION] = os.environ.get("SLURM_JOB_ID", "")
    return _starter


_starter: subprocess.Popen | None = None  # kept: its standard input is the starter's lifeline


def is_workflow_script(path: str) -> bool:
    """Whether ``path`` is a script Snakemake runs for a rule: it writes each into ``.snakemake/scripts/``."""
    parent = os.path.dirname(os.path.abspath(path))
    return os.path.basename(parent) == "scripts" and os.path.basename(os.path.dirname(parent)) == ".snakemake"


def benchmarked() -> bool:
    """Whether this workflow script's job has a ``benchmark:`` file. Snakemake's preamble, which runs before
    the script's own lines, puts a ``snakemake`` object in ``__main__`` whose ``bench_iteration`` is the
    benchmark repeat's number for such a job and ``None`` for any other."""
    job = getattr(sys.modules.get("__main__"), "snakemake", None)
    return getattr(job, "bench_iteration", None) is not None


def handoff() -> None:
    """Run this process's workflow script in a child of the warm starter, if this run has one, and exit with
    its status; otherwise return, and the script runs in this process: so does one that is no workflow script
    (a test that runs a script by path) or has a ``benchmark:`` file (:func:`benchmarked`)."""
    if not is_workflow_script(sys.argv[0]) or benchmarked():
        return
    result = _run_job({"argv": sys.argv})
    if result is None:
        return  # no starter (or it died before forking): run here
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(result[0])


def available() -> bool:
    """Whether this process may hand its work to a warm starter: one is named in :data:`ENV` (not ``0``),
    this is no forked job already, and it runs in this process's SLURM allocation (:data:`ALLOCATION`)."""
    name = os.environ.get(ENV)
    return bool(name and name != "0" and not os.environ.get(IN_CHILD)
                and os.environ.get("SLURM_JOB_ID", "") == os.environ.get(ALLOCATION, ""))


def run_module(module: str, args: list[str], on_start=None) -> tuple[int, tuple[float, float]] | None:
    """``python -m module args`` in a child of the warm starter (:func:`_run_job`: None where it could not
    fork one, and the caller runs the module itself); ``on_start(pid)`` is called once the child runs."""
    return _run_job({"module": module, "argv": [module, *args]}, on_start)


def _run_job(request: dict, on_start=None) -> tuple[int, tuple[float, float]] | None:
    """Send ``request`` with this process's working directory, environment and standard streams to the
    starter, and wait for the child it forks, passing it SIGINT, SIGTERM, SIGHUP and SIGUSR1 (a trainer's
    checkpoint signals): its exit status and ``(cpu_seconds, peak_rss_mb)`` of it and its descendants (the
    starter's ``wait4``); None where there is no starter (:func:`available`) or it died before forking."""
    if not available():
        return None
    request = {**request, "cwd": os.getcwd(), "env": dict(os.environ)}
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect("\0" + os.environ[ENV])
        payload = json.dumps(request).encode()
        socket.send_fds(sock, [len(payload).to_bytes(8, "little") + payload], [0, 1, 2])
        pid = int(_read_line(sock))  # the child's pid: from here on the job runs there
    except (OSError, ValueError):
        sock.close()
        return None
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
        signal.signal(sig, lambda s, _f, pid=pid: _kill(pid, s))
    if on_start is not None:
        on_start(pid)
    try:
        status, cpu, rss = _read_line(sock).split()
        return int(status), (float(cpu), float(rss))
    except (OSError, ValueError):
        print(f"warm start: lost the starter while job process {pid} ran", file=sys.stderr)
        _kill(pid, signal.SIGKILL)
        return 1, (0.0, 0.0)


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _read_line(sock: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(64)
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return data.decode().strip()


def _recv_request(conn: socket.socket) -> tuple[dict, list[int]]:
    fds = array.array("i")
    data, anc, _flags, _addr = conn.recvmsg(_MAX_REQUEST, socket.CMSG_LEN(3 * fds.itemsize))
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    size, data = int.from_bytes(data[:8], "little"), data[8:]
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise OSError("request cut short")
        data += chunk
    return json.loads(data), list(fds)


def _run_child(conn: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked child: become the job (its stdio, directory, environment, argv), run the script, exit."""
    status = 1
    try:
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds:
            os.close(fd)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # KeyboardInterrupt as in a new interpreter
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ[IN_CHILD] = "1"
        sys.argv = list(request["argv"])
        gc.enable()
        _die_with(conn)
        import runpy

        try:
            if request.get("module"):  # python -m <module>: sys.argv[0] becomes the module's file
                paths = [request["cwd"], *request["env"].get("PYTHONPATH", "").split(os.pathsep)]
                sys.path[:0] = [p for p in dict.fromkeys(paths) if p and p not in sys.path]  # as python -m
                runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(sys.argv[0], run_name="__main__")
            status = 0
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if e.code is not None and not isinstance(e.code, int):
                print(e.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            status = 1
        atexit._run_exitfuncs()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _die_with(conn: socket.socket) -> None:
    """Kill this child when the job process that asked for it closes its connection (the job was killed)."""
    import threading

    def watch() -> None:
        with contextlib.suppress(OSError):
            while conn.recv(64):
                pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()


def serve(name: str) -> None:
    """The starter: listen, import :data:`PRELOAD`, then fork one child per request until stdin closes."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + name)
    listener.listen(128)
    # CUDA does not survive a fork once initialized: an import that asks torch whether CUDA is there gets
    # NVML's answer instead of initializing it, and a starter that finds CUDA initialized all the same serves
    # nobody (its waiting jobs run in their own processes).
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    for module in PRELOAD:  # an optional module that fails: the jobs that need it import it themselves
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    if "torch" in sys.modules and sys.modules["torch"].cuda.is_initialized():
        return
    gc.collect()
    gc.freeze()  # the imported objects stay out of the children's collections: fewer copied pages
    gc.disable()
    children: dict[int, socket.socket] = {}
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(sys.stdin, selectors.EVENT_READ, "parent")
    while True:
        for key, _ in sel.select(timeout=0.05):
            if key.data == "parent" and not sys.stdin.buffer.read1(4096):
                return  # the Snakemake process is gone
            if key.data == "accept":
                conn, _ = listener.accept()
                try:
                    request, fds = _recv_request(conn)
                except (OSError, ValueError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    sel.close()
                    listener.close()
                    for other in children.values():
                        other.close()
                    _run_child(conn, request, fds)
                for fd in fds:
                    os.close(fd)
                try:
                    conn.sendall(f"{pid}\n".encode())
                except OSError:
                    _kill(pid, signal.SIGKILL)
                children[pid] = conn
        while children:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                code = os.waitstatus_to_exitcode(status)
                cpu = usage.ru_utime + usage.ru_stime  # the child's and its waited-for descendants'
                with contextlib.suppress(OSError):
                    conn.sendall(f"{code if code >= 0 else 128 - code} {cpu:.3f} "
                                 f"{usage.ru_maxrss / 1024:.2f}\n".encode())
                conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
