"""Write the miniatures of every hub resource the config names into its hub mirror:

    python -m vocab_transfer.miniatures configs/papers.yaml configs/overlays/rehearsal.yaml [--out FOLDER]

The config files merge as Snakemake's ``--configfile`` merges them; ``--out`` defaults to the config's
``hub_mirror``. A miniature already there that covers what the config needs is kept
(``<mirror>/rehearsal.json``; delete the folder to rebuild everything)."""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    from ..workflow.rehearsal import merged_config
    from .build import build_mirror

    parser = argparse.ArgumentParser(prog="python -m vocab_transfer.miniatures",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("configfiles", nargs="+", help="config files, merged in order")
    parser.add_argument("--out", help="the mirror folder (default: the config's hub_mirror)")
    args = parser.parse_args(argv)
    config = merged_config(args.configfiles)
    out = args.out or config.get("hub_mirror")
    if not out:
        parser.error("no --out and no hub_mirror in the config")
    start = time.perf_counter()
    done = build_mirror(config, out, progress=lambda m: print(m, flush=True))
    print(f"{sum(map(len, done.values()))} miniatures in {out} in {time.perf_counter() - start:.0f} s "
          f"({', '.join(f'{len(v)} {k}' for k, v in done.items())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
