"""Bundles of small jobs on SLURM: several jobs of one rule in one SLURM job (a group job).

Each bundled rule is a group of its own (``group: bundled("<rule>")`` in rules/*.smk: a :class:`BundleGroup`),
and the profile's ``group-components`` (profiles/slurm/config.yaml) says how many of its jobs one SLURM job
runs. The run that submits them forms the bundles. Inside the SLURM job, a Snakemake of the SLURM executor
plugin's (executor ``slurm-jobstep``) gets the bundle's jobs as ``--target-jobs``; the plugin (2.8) passes it
the run's resources but not its group settings, so it would make each job a group job of its own and run them
one after another, each in a Snakemake of its own, in an allocation sized for all of them at once.
:func:`pass_group_settings_to_slurm_jobs` makes the plugin pass them (``--group-components``): the bundle is
one group job there too, its jobs side by side in one Snakemake.
"""

from __future__ import annotations


def pass_group_settings_to_slurm_jobs() -> bool:
    """Have the SLURM executor plugin pass the run's group settings (``--groups``, ``--group-components``)
    to the Snakemake inside each of its jobs, as other executors may (``pass_group_args`` of its common
    settings); False where the plugin is not installed. Changes nothing for any other executor."""
    try:
        import snakemake_executor_plugin_slurm as slurm
    except ImportError:
        return False
    slurm.common_settings.pass_group_args = True
    return True


class BundleGroup:
    """A bundled rule's ``group:`` (rules/*.smk: ``group: bundled("init_embeddings")``): the group
    ``name`` where the run's group-components name it (profiles/slurm/config.yaml), else none. So only runs
    with that profile form group jobs; a dry run without it (`snakemake -n`) lists each job on its own, as a
    local run runs it."""

    def __init__(self, workflow, name: str):
        self.workflow, self.name = workflow, name

    def __call__(self, wildcards) -> str | None:
        settings = self.workflow.group_settings
        return self.name if settings is not None and self.name in settings.group_components else None

    def __repr__(self) -> str:
        return f"BundleGroup({self.name!r})"
