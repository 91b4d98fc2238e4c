"""The cluster settings agree with the workflow, without a cluster: profiles/slurm/config.yaml sends every
rule with a `gpu` resource to the GPU partition and every other job to the CPU partition, downloads, tables
and plots are local rules (`localrule: True`; they run on the login node, which has internet), and every
torchrun launcher of a config is `--standalone` (jobs that share a node pick free rendezvous ports).
tests/test_slurm.py checks the same profile against a real SLURM with two partitions.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
import yte

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
TINY = REPO / "tests" / "data" / "tiny_config.yaml"  # it has every stage, so every rule

# Rules the workflow runs on the login node: what fetches from the internet, and what only renders results.
LOCAL_PREFIXES = ("download_", "make_", "plot_")
# task data from the hub (small, minutes); a JSON list; an upload to the hub (the login node has internet)
LOCAL_OTHERS = {"prepare_task", "list_source_trainings", "push_export"}

# Prints {rule: {"gpu": declares a `gpu` resource, "local": a local rule, "norun": runs no job,
#               "group": its `group:`, "shell": its shell command or None}}.
RULES = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
    wf = api.workflow(ResourceSettings(), ConfigSettings(configfiles=[Path(sys.argv[2])]),
                      snakefile=Path(sys.argv[1]), workdir=Path(sys.argv[3]))._workflow
    print(json.dumps({r.name: {"gpu": "gpu" in r.resources, "local": r.name in wf._localrules,
                                   "norun": r.norun, "group": getattr(r._group, "name", r._group),
                                   "shell": r.shellcmd}
                      for r in wf.rules}))
"""


def load_profile(path: Path = PROFILE) -> dict:
    """The profile as Snakemake reads it (yte, YAML anchors resolved)."""
    with open(path) as f:
        return yte.process_yaml(f, require_use_yte=True)


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> dict[str, dict[str, bool]]:
    workdir = tmp_path_factory.mktemp("rules")
    proc = subprocess.run([sys.executable, "-c", RULES, str(REPO / "Snakefile"), str(TINY), str(workdir)],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_gpu_rules_go_to_the_gpu_partition(rules):
    profile = load_profile()
    default, per_rule = profile["default-resources"], profile["set-resources"]
    gpu_partition, gpu_account = (per_rule["train_lapt"]["slurm_partition"],
                                  per_rule["train_lapt"]["slurm_account"])
    assert default["slurm_partition"] == "<cpu-partition>" and default["slurm_account"] == "<cpu-account>"
    assert (gpu_partition, gpu_account) == ("<gpu-partition>", "<gpu-account>")
    gpu_rules = {name for name, rule in rules.items() if rule["gpu"]}
    assert {"train_lapt", "finetune", "train_source_task", "evaluate_zero_shot"} <= gpu_rules
    on_gpu_partition = {name for name, res in per_rule.items() if res.get("slurm_partition") == gpu_partition}
    assert on_gpu_partition == gpu_rules
    for name in gpu_rules:
        assert per_rule[name]["slurm_account"] == gpu_account, name
        # the plugin ignores `gpus` for sbatch; the rule's `gpu` counts
        assert "gpus" not in per_rule[name], name


def test_profile_names_only_rules_of_the_workflow(rules):
    assert set(load_profile()["set-resources"]) <= set(rules)


def test_resumable_trainers_get_sigterm_before_the_time_limit():
    per_rule = load_profile()["set-resources"]
    for name in ("train_lapt", "finetune", "train_source_task"):
        assert "--signal=TERM@300" in per_rule[name]["slurm_extra"], name
    assert load_profile()["retries"] >= 1


def test_downloads_tables_and_plots_are_localrules(rules):
    local = {name for name, rule in rules.items() if rule["local"]}
    expected = {name for name in rules if name.startswith(LOCAL_PREFIXES)} | LOCAL_OTHERS
    assert {"download_source_model", "download_reference_model", "download_dictionary",
            "download_word_vectors", "make_init_table", "plot_lapt_curves"} <= expected
    assert local == expected  # every other rule (prepare_corpus included) goes to the cluster
    # collect targets, submit nothing
    assert {name for name, rule in rules.items() if rule["norun"]} == {"all", "export", "push"}
    assert not any(rules[name]["gpu"] for name in local)


@pytest.mark.parametrize("config", sorted((REPO / "configs").glob("*.yaml")), ids=lambda p: p.stem)
def test_torchrun_launchers_are_standalone(config):
    """Two torchrun jobs on one node each need their own rendezvous; `--standalone` picks a free port."""
    spec = yaml.safe_load(config.read_text())
    for section in ("lapt", "finetune", "zero_shot"):
        launcher = (spec.get(section) or {}).get("launcher", "python")
        # a program alone, or a list of arguments
        words = [launcher] if isinstance(launcher, str) else launcher
        if words[0] == "torchrun":
            assert "--standalone" in words, (section, launcher)


def test_bundled_rules_and_their_sizes(rules):
    """Each grouped rule is its own group (no job of a bundle waits for another in it), none is local, the
    long many-threaded CPU trainings stay alone, and group-components bundles each. A CPU bundle shares the
    CPU partition; a GPU bundle of one-GPU jobs asks for at most bundles.NODE_GPUS GPUs, and train_lapt's for
    two jobs of up to half of them (the GPU rules' jobs each claim their own GPUs: test_launch.py)."""
    from vocab_transfer.workflow.bundles import NODE_GPUS

    grouped = {name: rule["group"] for name, rule in rules.items() if rule["group"]}
    assert {"init_embeddings", "tokenize_corpus", "compute_overlap", "pack_heldout", "probe_init", "finetune",
            "train_lapt", "evaluate_zero_shot", "train_source_task", "evaluate_init"} <= set(grouped)
    assert all(group == name for name, group in grouped.items()), grouped
    assert not any(rules[name]["local"] for name in grouped)
    assert not {"train_tokenizer", "train_fasttext", "train_source_fasttext"} & set(grouped)
    components = dict(entry.split("=") for entry in load_profile()["group-components"])
    assert set(components) == set(grouped.values())
    per_rule = load_profile()["set-resources"]
    for name, count in components.items():
        assert 1 < int(count) <= 8, (name, count)
        if rules[name]["gpu"]:
            assert name in per_rule, name  # on the GPU partition
            assert int(count) * (2 if name == "train_lapt" else 1) <= NODE_GPUS, (name, count)
        else:
            assert name not in per_rule, name  # a bundle's jobs share the CPU partition


def test_gpu_rules_claim_their_gpus(rules):
    """Every GPU rule with a shell command starts it with the claim (launch --claim <its GPUs> --benchmark
    <its file> -- ...), and exec: SLURM's signal must reach the trainer; script rules claim in setup_job
    (workflow/job.py)."""
    import inspect

    from vocab_transfer.workflow import job

    assert "claim_gpus(" in inspect.getsource(job.setup_job)
    for name in ("finetune", "train_lapt", "train_source_task", "evaluate_zero_shot"):
        shell = rules[name]["shell"]
        claim = ("exec python -m vocab_transfer.training.launch --claim {resources.gpu}"
                 " --benchmark {log.benchmark:q} -- ")
        assert shell.startswith(claim), shell


def test_local_polling_is_the_shipped_polling_divided_by_ten():
    """scripts/rehearse.sh polls ten times as often as a cluster run with the shipped profile (cluster.py)."""
    from vocab_transfer.workflow.cluster import LOCAL_RUN_SETTINGS

    profile = load_profile()
    for key in ("seconds-between-status-checks", "slurm-init-seconds-before-status-checks"):
        assert 10 <= profile[key] <= 60, key  # a job is noticed within a minute while jobs finish often
        assert LOCAL_RUN_SETTINGS[key] * 10 == profile[key], key


def test_slurm_dry_run_bundles_jobs(tmp_path):
    """The tiny config planned for SLURM with the shipped profile (placeholders filled in): group jobs
    form, and the run would submit fewer SLURM jobs than it has steps."""
    from vocab_transfer.workflow.cluster import local_profile

    profile = local_profile(PROFILE, tmp_path / "profile")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--snakefile", str(REPO / "Snakefile"),
                           "--profile", profile, "--configfile", str(TINY), "--directory", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    log = proc.stdout + proc.stderr
    bundles = re.findall(r"^\[.*\] Group job (\w+)", log, re.MULTILINE)
    alone = re.findall(r"^rule (\w+):", log, re.MULTILINE)  # jobs outside a group, local rules included
    inside = re.findall(r"^    rule (\w+):", log, re.MULTILINE)
    assert bundles and len(inside) > len(bundles), log[-3000:]
    assert len(alone) + len(bundles) < len(alone) + len(inside)
    # without the profile's group-components (a local run and its dry run) every job stays on its own
    plain = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile",
                            str(REPO / "Snakefile"), "--configfile", str(TINY), "--directory", str(tmp_path)],
                           capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                           timeout=300)
    assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr[-3000:]
    assert "Group job" not in plain.stdout + plain.stderr
    assert len(re.findall(r"^(?:local)?rule (\w+):", plain.stdout, re.MULTILINE)) == len(alone) + len(inside)
