def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slurm: submits jobs to the local SLURM cluster of scripts/slurm/start.sh (minutes)"
    )
