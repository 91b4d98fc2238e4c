"""Bundles of small jobs on SLURM: several jobs of one rule in one SLURM job (a group job).

Each bundled rule is a group of its own (``group:`` in rules/*.smk, named after the rule), and the profile's
``group-components`` (profiles/slurm/config.yaml) says how many of its jobs one SLURM job runs. The run that
submits them forms the bundles. Inside the SLURM job, a Snakemake of the SLURM executor plugin's (executor
``slurm-jobstep``) gets the bundle's jobs as ``--target-jobs``; the plugin (2.8) passes it the run's resources
but not its group settings, so it would make each job a group job of its own and run them one after another,
each in a Snakemake of its own, in an allocation sized for all of them at once.
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
