"""Where each number of a table comes from, and a check that no two rows of a table read one artifact.

Every table the workflow writes (``results/tables/<name>.csv`` / ``.md`` / ``.html``) has a sidecar
``<name>.provenance.parquet`` beside it, written by the same job: a row per numeric cell of the table's CSV
and artifact that cell was computed from (:data:`COLUMNS`):

- ``table``; ``csv_row`` and ``field``: the cell in the CSV (its row number, from 0, and column);
- ``block``, ``row``, ``column``: the same cell as the rendered table shows it (the source model, task,
  language or step a Markdown block is about; the row's model, method, LAPT run or language, as the config
  names it; the task, language or step);
- ``artifact``: the file or folder read, as the job was given it (relative to the workflow's folder);
  ``records``: which of its records the cell used where it holds more than one cell's (``method=focus``,
  ``seed=1,2,3``, ``step=300``), empty for all of it;
- ``checksum``: the artifact's content when the table was written
  (:func:`vocab_transfer.artifacts.artifact_checksum`);
- ``role``: ``value``, or ``reference`` for an artifact the number is only compared with (the source model's
  score behind a benchmark's "share kept", the source tokenizer behind a UNK share).

:func:`check_provenance` (``python -m vocab_transfer.report.provenance results/tables``) reports two rows that
read one artifact (the same records of it) or two identical copies of one: a row wired to another row's model,
run or seed, which miniature models that all score alike would otherwise hide; also an artifact changed since
the table was written, a table without its sidecar, and what :func:`check_lineage` finds behind the score
files and LAPT curves (from what the trainers recorded they read, :func:`lineage`).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Iterable, Sequence
from contextlib import suppress
from pathlib import Path

from .. import artifacts, lazy
from ..artifacts import artifact_checksum
from ..io import write_parquet

pd = lazy.module("pandas")
pa = lazy.module("pyarrow")
pq = lazy.module("pyarrow.parquet")

#: The sidecar's columns, in order (all strings but ``csv_row``).
COLUMNS = ("table", "csv_row", "field", "block", "row", "column", "artifact", "records", "checksum", "role")
#: The sidecar's name: ``<table>`` + this, beside the table's ``.csv`` / ``.md``.
SUFFIX = ".provenance.parquet"
#: The column that names each record's artifact in the frames the table scripts read (:func:`read_tagged`).
ARTIFACT = "artifact"
ROLES = ("value", "reference")


def provenance_path(table: str | os.PathLike) -> Path:
    """The sidecar of a table file (``init_mlm_loss.md`` -> ``init_mlm_loss.provenance.parquet``); a sidecar
    is its own."""
    table = Path(table)
    return table if table.name.endswith(SUFFIX) else table.with_name(table.name.partition(".")[0] + SUFFIX)


def read_tagged(paths: Iterable[str], **fields) -> pd.DataFrame:
    """The parquet files at ``paths``, concatenated, each record with :data:`ARTIFACT` (its file) and
    ``fields``."""
    frames = [pd.read_parquet(p).assign(**{ARTIFACT: str(p)}, **fields) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({ARTIFACT: []})


def _missing(v) -> bool:
    return v is None or (not isinstance(v, str) and pd.isna(v))


def _label(table, i: int, names: str | Sequence[str]) -> str:
    """A cell's block/row/column label: the value of one column of the table, or ``name=value`` words of
    several."""
    if isinstance(names, str):
        v = table.at[i, names] if names in table else None
        return "" if _missing(v) else str(v)
    return " ".join(f"{n}={table.at[i, n]}" for n in names if n in table and not _missing(table.at[i, n]))


def _values(series) -> str:
    return ",".join(sorted({str(v) for v in series if v is not None and v == v}))


def _key(v) -> str:
    """A match key's text: None and NaN are empty, 3.0 is 3 (a column that holds NaN elsewhere is float)."""
    if _missing(v):
        return ""
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def cells(table, inputs, *, match: dict[str, str], row: str | Sequence[str], column: str | Sequence[str] = (),
          block: str | Sequence[str] = (), fields: Sequence[str], records: Sequence[str] = (),
          role: str = "value", where: dict | None = None) -> list[dict]:
    """Provenance entries of ``table``'s cells (its rows, the ``fields`` columns with a value): each cell is
    attributed to the artifacts of the ``inputs`` records (a :func:`read_tagged` frame, or one record per file
    with :data:`ARTIFACT`) whose ``match`` columns (``{table column: inputs column}``) equal the table row's,
    those of ``where`` (``{inputs column: value}``) only. ``records``: inputs columns that say which records
    of an artifact the cell used. A cell with a value and no artifact is an error (the table computed it from
    nothing it read)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {list(ROLES)}, not {role!r}")
    pool = inputs
    for key, value in (where or {}).items():
        pool = pool[pool[key] == value] if key in pool else pool.iloc[0:0]
    pool = pool.assign(**{c: None for c in [*match.values(), *records] if c not in pool})
    groups: dict[tuple, list[int]] = {}
    keyed = zip(*(pool[c] for c in match.values()), strict=True) if match else [()] * len(pool)
    for j, values in enumerate(keyed):
        groups.setdefault(tuple(map(_key, values)), []).append(j)
    out = []
    for i in table.index:
        present = [f for f in fields if f in table and not pd.isna(table.at[i, f])]
        if not present:
            continue
        hit = pool.iloc[groups.get(tuple(_key(table.at[i, c]) for c in match), [])]
        if hit.empty:
            where_text = ", ".join(f"{c}={table.at[i, c]}" for c in match)
            raise ValueError(f"no artifact read holds the records of table row {i} ({where_text}), which has "
                             f"values in {present}")
        labels = {"block": _label(table, i, block), "row": _label(table, i, row),
                  "column": _label(table, i, column)}
        for artifact, recs in hit.groupby(ARTIFACT, sort=True):
            used = " ".join(f"{c}={_values(recs[c])}" for c in records if _values(recs[c]))
            base = {"csv_row": int(i), **labels, "artifact": str(artifact), "records": used, "role": role}
            out += [{**base, "field": f} for f in present]
    return out


def _numeric(table) -> list[str]:
    """The numeric columns of ``table`` (bool columns are flags, not numbers)."""
    is_a = pd.api.types
    return [c for c in table.columns if is_a.is_numeric_dtype(table[c]) and not is_a.is_bool_dtype(table[c])]


def init_loss_cells(table, inputs) -> list[dict]:
    """FOCUS Table 4 (:func:`vocab_transfer.report.tables.init_loss_table`): a row per (source, language,
    method), read from the method's records of the (source, language) init-evaluation file."""
    return cells(table, inputs, match={"source": "source", "language": "target", "method": "method"},
                 block="source", row="method", column="language", fields=_numeric(table), records=["method"])


def finetune_cells(table, inputs) -> list[dict]:
    """The fine-tuning table (:func:`vocab_transfer.report.tables.finetune_table`): a row per (source, task,
    model), read from its scores files (a row per seed)."""
    return cells(table, inputs, match={k: k for k in ("source", "task_name", "model")}, block="source",
                 row="model", column="task_name", fields=_numeric(table), records=["seed"])


def paper_cells(table, inputs, spec: dict) -> list[dict]:
    """A downstream table in a paper's layout (:func:`vocab_transfer.report.tables.paper_table`): a row per
    model and task, or with ``grid`` a row per grid cell (``name`` its model; the Best column reads the row's
    best cell's). A cell that did not run ("—", 0 seeds) reads nothing."""
    if "grid" in spec:
        return cells(table, inputs, match={"source": "source", "task_name": "task_name", "name": "model"},
                     block=["source", "task_name"], row="row", column="column", fields=["value"],
                     records=["seed"])
    have = table[table["test_mean"].notna()] if "test_mean" in table else table.iloc[0:0]
    return finetune_cells(have, inputs)  # its rows and columns are the fine-tuning table's


def lapt_cells(table, inputs, spec: dict) -> list[dict]:
    """A LAPT table (:func:`vocab_transfer.report.tables.lapt_table`): a row per run, language and step, read
    from the step's records of the run's curve; with ``grid`` a row per grid cell (``name`` its run)."""
    grid = "grid" in spec
    match = {"name" if grid else "run": "run", "language": "language", "step": "step"} | (
        {"source": "source"} if "source" in table else {})
    layout = ({"block": ["source", "language", "step"], "row": "row", "column": "column", "fields": ["value"]}
              if grid else {"block": "source", "row": "run", "column": ["language", "step"],
                            "fields": [spec.get("value", "perplexity")]})
    return cells(table, inputs, match=match, records=["step"], **layout)


def init_table_cells(table, inputs, spec: dict) -> list[dict]:
    """A table of init-time values (:func:`vocab_transfer.report.tables.init_table`): the held-out value of a
    (source, language, method) from the method's records of the init-evaluation file; with ``probes`` each
    probe's accuracy from the method's probe file."""
    evals = inputs[~inputs["probe"].notna()] if "probe" in inputs else inputs
    evals = evals.assign(language=evals["target"]) if "target" in evals else evals
    layout = {"match": {k: k for k in ("source", "language", "method")}, "block": "source", "row": "method",
              "column": "language", "records": ["method"]}
    out = cells(table, evals, fields=[spec.get("value") or "perplexity"], **layout)
    for probe in spec.get("probes") or {}:
        out += cells(table, inputs, fields=[probe], where={"probe": probe}, **layout)
    return out


def benchmark_cells(table) -> list[dict]:
    """The benchmark table (:func:`vocab_transfer.report.tables.benchmark_table`'s long form, with
    :data:`ARTIFACT`): every number of a row from its model's scores file; the shares kept also from the
    source model's (a reference)."""
    keys = ["source", "target", "task", "metric", "filter"]
    rows = table.drop(columns=ARTIFACT)
    layout = {"block": keys[:2], "row": ["stage", "name"], "column": keys[2:], "records": keys[2:]}
    return (cells(rows, table, match={k: k for k in [*keys, *layout["row"]]}, fields=_numeric(rows), **layout)
            + cells(rows, table, match={k: k for k in keys}, role="reference", where={"stage": "source"},
                    fields=[f for f in ("kept", "kept_over_chance") if f in rows], **layout))


def vocab_cells(table, files, what: str, *, keys: Sequence[str] = ("language", "source"),
                fields: Sequence[str] | None = None, column: str | Sequence[str] = (),
                role: str = "value") -> list[dict]:
    """A corpus or vocabulary table's cells (:mod:`vocab_transfer.report.vocab_tables`; a row per language, a
    block per source) read from its files of ``what`` (stats, overlap, fasttext_tokens, provenance, tokenizer,
    source_tokenizer): ``files`` has one record per file read, with :data:`ARTIFACT`, ``what``, ``language``
    and ``source`` where it has them. A cell is matched on ``keys`` (``source`` where the table has one);
    ``fields``: default the table's numeric columns."""
    return cells(table, files, match={k: k for k in keys if k != "source" or "source" in table},
                 block="source", row="language", column=column, where={"what": what}, role=role,
                 fields=_numeric(table) if fields is None else fields)


def provenance_frame(entries: Sequence[dict], table: str, base: str | os.PathLike = ".") -> pd.DataFrame:
    """The sidecar's rows for ``entries`` (of :func:`cells`), with each artifact's checksum (``artifact``
    paths relative to ``base``), in :data:`COLUMNS` order."""
    sums = {a: artifact_checksum(Path(base) / a) for a in sorted({e["artifact"] for e in entries})}
    rows = [{**e, "table": table, "checksum": sums[e["artifact"]]} for e in entries]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    return frame.astype({c: "string" for c in COLUMNS if c != "csv_row"} | {"csv_row": "int64"})


def write_provenance(entries: Sequence[dict], table: str, path: str | os.PathLike) -> None:
    """Write a table's sidecar (parquet with an explicit schema, atomically, with its manifest)."""
    schema = pa.schema([(c, pa.int64() if c == "csv_row" else pa.string()) for c in COLUMNS])
    write_parquet(provenance_frame(entries, table), path, schema=schema)


#: The columns of a score file that say what its rows claim to be (:func:`lineage`).
CLAIMS = ("source", "language", "model", "method")


def _now(base: Path, path: str) -> str | None:
    """The checksum of the artifact at ``path`` (under ``base`` unless absolute) now; None if it is gone."""
    return artifact_checksum(base / path) if (base / path).exists() else None


def lineage(artifact: str, base: str | os.PathLike = ".") -> dict:
    """What the numbers of ``artifact`` (relative to ``base``) trace back to, from what the jobs recorded
    they read (:func:`vocab_transfer.artifacts.recorded_reads`): ``model``, the read they are of (a
    fine-tuning score file's LAPT output, snapshot, init artifact or source model; a zero-shot score file's
    target); ``origin``, what that model's training started from (a LAPT output's init artifact, or the model
    it continued; a LAPT curve's own), each ``{"path", "checksum", "read"}`` (``read``: the name it was read
    under) with the ``method`` its job was run for where it recorded one (an init artifact's); ``claims``: the
    values of the :data:`CLAIMS` columns of the artifact's rows. Empty where nothing was recorded or the
    artifact is gone."""
    base, out = Path(base), {}
    path = base / artifact

    def recorded(p: Path) -> dict:
        with suppress(OSError, ValueError, artifacts.ArtifactError):
            return artifacts.recorded_inputs(p) if p.exists() else {}
        return {}

    def read(record: dict, key: str) -> dict | None:
        name = record.get(key)
        entry = (record.get(artifacts.READS) or {}).get(name)
        if not isinstance(entry, dict) or not entry.get("path"):
            return None
        entry = {**entry, "read": name}
        with suppress(OSError, ValueError, artifacts.ArtifactError):
            meta = artifacts.read_metadata(base / entry["path"]) or {}
            if method := (meta.get("wildcards") or {}).get("method"):
                entry["method"] = str(method)
        return entry

    record = recorded(path)
    if model := read(record, artifacts.EVALUATED):
        out["model"] = model
        record = recorded(base / model["path"])
    if origin := read(record, artifacts.STARTED_FROM):
        out["origin"] = origin
    if path.suffix == ".parquet" and path.is_file():
        with suppress(OSError, ValueError):
            columns = [c for c in CLAIMS if c in pq.read_schema(path).names]
            if columns:
                rows = pq.read_table(path, columns=columns).to_pandas()
                out["claims"] = {c: _values(rows[c]).split(",") for c in columns if _values(rows[c])}
    return out


def _cells_text(values, files: Iterable[str]) -> str:
    """The cells (row, and column where there is one) that read ``files``, for a message."""
    reads = values[values["artifact"].isin(set(files))].drop_duplicates(["row", "column"])
    pairs = sorted(zip(reads["row"], reads["column"], strict=True))
    return ", ".join(f"'{r}'" + (f" ({c})" if c else "") for r, c in pairs)


def check_lineage(frame, *, base: str | os.PathLike | None = None, verify: bool = True) -> list[str]:
    """What is wrong with where one table's numbers trace back to (:func:`lineage` of each artifact read as a
    value): rows of different models whose scores are of one model (a fine-tuning job wired to another row's
    LAPT output, snapshot or init artifact); one model (of a source and language) whose scores are of two;
    rows of different methods that trace back to one starting point (a LAPT run wired to another method's init
    artifact); a row whose model started from an init artifact made for another method; with ``verify``, a
    model or starting point that changed since the scores were made from it. A model both rows only share
    further back (the source model every LAPT run and init starts from) is a reference and allowed, as is one
    starting point of runs of one method (a learning-rate grid of LAPT runs)."""
    if frame.empty:
        return []
    name = str(frame["table"].iloc[0])
    root = Path(base) if base is not None else Path.cwd()
    values = frame[frame["role"] == "value"]
    traced = {a: lineage(a, root) for a in sorted(set(values["artifact"]))}
    problems = []

    def claims(a: str, key: str) -> list[str]:
        return traced[a].get("claims", {}).get(key, [])

    model_of = {a: os.path.normpath(t["model"]["path"]) for a, t in traced.items() if "model" in t}
    by_model: dict[str, list[str]] = {}
    for a, path in model_of.items():
        by_model.setdefault(path, []).append(a)
    shared = set()  # scores of another row's model: what their model started from says nothing more
    for path, files in sorted(by_model.items()):
        models = sorted({m for a in files for m in claims(a, "model")})
        if len(models) > 1:
            shared.update(files)
            problems.append(f"{name}: rows {_cells_text(values, files)} (models {', '.join(models)}) are "
                            f"scores of one model {path} ({', '.join(files)})")
    by_claim: dict[tuple, set[str]] = {}
    for a, path in model_of.items():
        key = tuple(",".join(claims(a, c)) for c in ("source", "model", "language"))
        if key[1] and "," not in key[1]:
            by_claim.setdefault(key, set()).add(path)
    for (source, model, language), paths in sorted(by_claim.items()):
        if len(paths) > 1:
            files = [a for a in model_of if claims(a, "model") == [model]]
            where = f" ({source}, {language})" if source or language else ""
            problems.append(f"{name}: model '{model}'{where} is scores of {len(paths)} models: "
                            f"{', '.join(sorted(paths))} ({', '.join(files)})")
    starts: dict[str, list[tuple[str, dict]]] = {}  # what each row's model started from (itself if no run)
    for a, t in traced.items():
        start = t.get("origin") or t.get("model")
        if start and a not in shared:
            starts.setdefault(os.path.normpath(start["path"]), []).append((a, start))
    for path, uses in sorted(starts.items()):
        methods = sorted({m for a, _ in uses for m in claims(a, "method")})
        if len(methods) > 1:
            files = sorted({a for a, _ in uses})
            through = sorted({traced[a]["model"]["path"] for a in files
                              if "origin" in traced[a] and traced[a]["model"]["path"] != path})
            via = f" (through {', '.join(through)})" if through else ""
            problems.append(f"{name}: rows {_cells_text(values, files)} (methods {', '.join(methods)}) trace "
                            f"back to one starting point {path}{via}")
        made_for = {e["method"] for _, e in uses if e.get("read") == "embeddings" and "method" in e}
        for a, _ in uses:
            claimed = claims(a, "method")
            if made_for and claimed and not set(claimed) & made_for:
                problems.append(f"{name}: row {_cells_text(values, [a])} claims method {', '.join(claimed)}, "
                                f"but its model started from {path}, made for method "
                                f"{', '.join(sorted(made_for))} ({a})")
    if verify:
        checksum = functools.cache(functools.partial(_now, root))
        for a, t in traced.items():
            for entry in (t.get("model"), t.get("origin")):
                if entry and entry.get("checksum") and (now := checksum(entry["path"])) != entry["checksum"]:
                    problems.append(f"{name}: {a} traces back to {entry['path']}, which "
                                    + ("is gone" if now is None else "changed since"))
    return list(dict.fromkeys(problems))


def _rows_text(rows: Iterable[str]) -> str:
    return ", ".join(f"'{r}'" for r in sorted(set(rows)))


def check_provenance(frame, *, base: str | os.PathLike | None = None, verify: bool = True,
                     follow: bool = True) -> list[str]:
    """What is wrong with one table's provenance (a sidecar's rows): two rows that read the same records of
    one artifact, a cell that reads the same records (``seed=1``) from two artifacts (two files that claim one
    run), or two rows that read files with the same content (a copy); with ``verify``, an artifact whose
    checksum (relative to ``base``, default the working directory) is no longer the recorded one, or that is
    gone. Reference reads (``role`` reference) may be shared. With ``follow``, also what :func:`check_lineage`
    finds behind the artifacts (the models the scores are of, and what those started from)."""
    if frame.empty:
        return []
    name = str(frame["table"].iloc[0])
    problems = []
    values = frame[frame["role"] == "value"]
    for (artifact, records), reads in values.groupby(["artifact", "records"], sort=True):
        if reads["row"].nunique() > 1:
            what = f"{artifact}" + (f" ({records})" if records else "")
            problems.append(f"{name}: rows {_rows_text(reads['row'])} read the same artifact {what}")
    for (_, _, records), reads in values[values["records"] != ""].groupby(["csv_row", "field", "records"],
                                                                          sort=True):
        if reads["artifact"].nunique() > 1:
            files = sorted(set(reads["artifact"]))
            problems.append(f"{name}: row '{reads['row'].iloc[0]}' ({reads['column'].iloc[0]}) reads "
                            f"{records} from {len(files)} artifacts: {', '.join(files)}")
    for checksum, reads in values.groupby("checksum", sort=True):
        if reads["artifact"].nunique() > 1 and reads["row"].nunique() > 1:
            problems.append(f"{name}: rows {_rows_text(reads['row'])} read identical files "
                            f"{', '.join(sorted(set(reads['artifact'])))} ({checksum})")
    if verify:
        root = Path(base) if base is not None else Path.cwd()
        for artifact, checksum in frame.drop_duplicates("artifact")[["artifact", "checksum"]].values:
            if (now := _now(root, artifact)) is None or now != checksum:
                problems.append(f"{name}: {artifact} "
                                + ("is gone" if now is None else "changed since the table was written"))
    if follow:
        problems += check_lineage(frame, base=base, verify=verify)
    return list(dict.fromkeys(problems))  # a cell's problem once, not once per number of it


def check_table_provenance(path: str | os.PathLike, *, base: str | os.PathLike | None = None,
                           verify: bool = True) -> list[str]:
    """:func:`check_provenance` of the table at ``path`` (its ``.md``, ``.csv``, ``.html`` or sidecar); a
    table without a sidecar is a problem."""
    side = provenance_path(path)
    if not side.is_file():
        return [f"{Path(path).name.partition('.')[0]}: no provenance ({side} is missing)"]
    return check_provenance(pd.read_parquet(side), base=base, verify=verify)


def summary(path: str | os.PathLike) -> str:
    """``<cells> cells from <artifacts> artifacts`` of a table's sidecar."""
    frame = pd.read_parquet(provenance_path(path))
    n_cells = frame[["csv_row", "field"]].drop_duplicates().shape[0]
    return f"{n_cells} cells from {frame['artifact'].nunique()} artifacts"


def _tables(paths: Sequence[str]) -> list[Path]:
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted({provenance_path(f) for f in p.rglob("*.md")} | set(p.rglob(f"*{SUFFIX}")))
        else:
            out.append(provenance_path(p))
    return list(dict.fromkeys(out))


def main(argv: list[str] | None = None) -> int:
    """``python -m vocab_transfer.report.provenance PATH...``: check the provenance of each table (a table
    file or sidecar, or every table under a folder); one line per table; exit status 1 if a table has a
    problem."""
    parser = argparse.ArgumentParser(prog="python -m vocab_transfer.report.provenance",
                                     description=main.__doc__)
    parser.add_argument("paths", nargs="+",
                        help="tables (.md, .csv, .html or .provenance.parquet) or folders")
    parser.add_argument("--base", default=".",
                        help="the workflow's folder, where artifact paths start (default: .)")
    args = parser.parse_args(argv)
    bad = 0
    for side in _tables(args.paths):
        problems = check_table_provenance(side, base=args.base)
        bad += bool(problems)
        print(f"PROBLEM {side}" if problems else f"ok      {side}: {summary(side)}")
        for p in problems:
            print(f"  {p}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
