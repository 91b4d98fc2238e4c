"""Bundles of small jobs on SLURM: several jobs of one rule in one SLURM job (a group job).

Each bundled rule is a group of its own (``group: bundled("<rule>")`` in rules/*.smk: a :class:`BundleGroup`),
and the profile's ``group-components`` (profiles/slurm/config.yaml) says how many of its jobs one SLURM job
runs. Inside the SLURM job, a Snakemake of executor ``slurm-jobstep`` gets the bundle's jobs as
``--target-jobs``; the plugin (2.8) passes it the run's resources but not its group settings, so it would run
them one after another, each in a Snakemake of its own, in an allocation sized for all of them at once.
:func:`pass_group_settings_to_slurm_jobs` makes it pass them: the bundle's jobs run side by side there too.

A bundle of GPU jobs asks for the sum of their GPUs (``--gpus=N``), and every job in it sees all of them, so
each job claims its own first (vocab_transfer/training/launch.py: ``claim_gpus``; the GPU rules' commands
start with ``python -m vocab_transfer.training.launch --claim <its GPUs> --``, workflow scripts claim in
``setup_job``). A bundle never asks for more than :data:`NODE_GPUS` GPUs: where group-components times a job's
GPUs would, that rule's jobs run one per SLURM job.
"""

from __future__ import annotations


def pass_group_settings_to_slurm_jobs() -> bool:
    """Have the SLURM executor plugin pass the run's ``--groups`` and ``--group-components`` to the Snakemake
    inside each of its jobs (``pass_group_args`` of its common settings); False without the plugin."""
    try:
        import snakemake_executor_plugin_slurm as slurm
    except ImportError:
        return False
    slurm.common_settings.pass_group_args = True
    return True


#: GPUs of one node: the most a bundle of GPU jobs asks for (its jobs' GPUs together). A site whose GPU nodes
#: have more may raise it (bundles of 2 LAPT jobs of 4 GPUs each: 8); one with fewer lowers it.
NODE_GPUS = 4


class BundleGroup:
    """A bundled rule's ``group:``: the group ``name`` where the run's group-components name it, else none,
    so that only runs with that profile form group jobs (a dry run without it lists each job on its own).

    ``gpus``: a GPU rule's jobs' (a number, or a function of the wildcards); where group-components times
    them exceeds :data:`NODE_GPUS`, the jobs stay on their own. ``alone`` (a function of the wildcards) names
    jobs that keep a SLURM job of their own (:func:`lapt_alone`)."""

    def __init__(self, workflow, name: str, gpus=0, alone=None):
        self.workflow, self.name, self.gpus, self.alone = workflow, name, gpus, alone

    def __call__(self, wildcards) -> str | None:
        settings = self.workflow.group_settings
        if settings is None or self.name not in settings.group_components:
            return None
        gpus = self.gpus(wildcards) if callable(self.gpus) else self.gpus
        too_many = gpus and int(gpus) * int(settings.group_components[self.name]) > NODE_GPUS
        return None if too_many or self.alone is not None and self.alone(wildcards) else self.name

    def __repr__(self) -> str:
        return f"BundleGroup({self.name!r})"


def lapt_alone(cfg):
    """train_lapt's ``alone``: every job where it runs on several nodes (``lapt.nodes``), else the one the
    config's ``rehearsal.interrupt`` names, whose short time limit a bundle would raise to its longest job's
    (vocab_transfer/workflow/interrupted.py checks that SLURM's signal stopped it)."""
    from .rehearsal import interrupt_runtime

    def alone(wildcards) -> bool:
        return cfg.lapt.nodes > 1 or interrupt_runtime(cfg, wildcards.run, wildcards.target) is not None

    return alone
