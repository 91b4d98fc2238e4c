"""Checks of the workflow config that JSON schema cannot express; run at parse time by rules/common.smk."""

from __future__ import annotations

import inspect
from pathlib import Path

from .methods import METHODS


class ConfigError(ValueError):
    """A config problem, reported before any job runs."""


def source_languages(source: dict) -> list[str]:
    """Languages a source model was pretrained on (Table 4's 'part of pretraining' columns)."""
    return list(source.get("pretrain", {}).get("languages", source.get("languages", [])))


def local_model_dir(source: dict) -> Path | None:
    """The source's ``model`` as a local directory, or None when it is a hub id (or pretrained here)."""
    model = source.get("model")
    return Path(model) if model and Path(model).is_dir() else None


def method_parameters(kind: str) -> set[str]:
    """Keyword parameters the method function of ``kind`` accepts (besides ``seed``)."""
    sig = inspect.signature(METHODS[kind].fn)
    return {n for n, p in sig.parameters.items() if p.kind == p.KEYWORD_ONLY and n != "seed"}


def check_schema(config: dict, schema_path: str | Path) -> None:
    """Validate ``config`` against the JSON schema; the error names the key path and the problem."""
    import jsonschema
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ConfigError(f"{where}: {error.message}")


def check_config(config: dict, schema_path: str | Path | None = None) -> None:
    """Raise :class:`ConfigError` naming the first problem: a schema violation (misspelled key, wrong
    type, unknown method kind), an unknown language or method parameter, or a local source model
    whose tokenizer does not match its embedding matrix."""
    if schema_path is not None:
        check_schema(config, schema_path)
    corpora = config["corpora"]
    for lang in config["targets"]:
        if lang not in corpora:
            raise ConfigError(f"targets: language {lang!r} has no entry under 'corpora' (known: {sorted(corpora)})")
    for name, source in config["sources"].items():
        for lang in source_languages(source):
            if lang not in corpora:
                raise ConfigError(f"sources.{name}: pretraining language {lang!r} has no entry under 'corpora' "
                                  f"(known: {sorted(corpora)})")
        model = local_model_dir(source)
        if model is not None:
            check_local_source(name, model, source.get("allow_padded_embeddings", False))
        elif source.get("model") and (source["model"].startswith((".", "/")) or source["model"].count("/") > 1):
            raise ConfigError(f"sources.{name}.model: {source['model']!r} is not a directory (nor a hub id)")
    for name, method in config["methods"].items():
        kind = method["kind"]
        if kind not in METHODS:
            raise ConfigError(f"methods.{name}: unknown kind {kind!r}; known: {sorted(METHODS)}")
        unknown = set(method) - {"kind", "label"} - method_parameters(kind)
        if unknown:
            raise ConfigError(f"methods.{name}: unknown parameter(s) {sorted(unknown)} for kind {kind!r}; "
                              f"accepted: {sorted(method_parameters(kind))}")


def check_local_source(name: str, model_dir: Path, allow_padded: bool) -> None:
    """Compare the tokenizer's size with the embedding rows in ``config.json`` (no weights loaded)."""
    from .source_model import TokenizerModelMismatch, check_tokenizer_matches, model_vocab_size
    from .tokenizer import load_tokenizer

    if not (model_dir / "config.json").is_file():
        raise ConfigError(f"sources.{name}.model: {model_dir} has no config.json (not a save_pretrained folder)")
    try:
        check_tokenizer_matches(len(load_tokenizer(str(model_dir))), model_vocab_size(model_dir), name=name,
                                allow_padded_embeddings=allow_padded)
    except TokenizerModelMismatch as e:
        raise ConfigError(str(e)) from None
