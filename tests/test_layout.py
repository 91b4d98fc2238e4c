"""The package's layering: the settings of the trainers load without them."""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules_after(code: str) -> list[str]:
    code += "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_trainer_settings_load_without_torch():
    loaded = _modules_after("from vocab_transfer.training.settings import LaptConfig, FinetuneConfig\n"
                            "LaptConfig.parse({'steps': 10, 'variant': 'two_stage'}).stages()")
    assert "vocab_transfer.training.settings" in loaded
    assert "torch" not in loaded


def test_checking_a_config_does_not_import_the_trainers():
    loaded = _modules_after("import yaml\nfrom vocab_transfer.workflow.config import check_config\n"
                            "check_config(yaml.safe_load(open('tests/data/tiny_config.yaml')))")
    # the lapt, finetune and adapter settings were checked
    assert "vocab_transfer.training.settings" in loaded
    trainers = [m for m in loaded if m.rsplit(".", 1)[-1] in ("lapt", "finetune", "zeroshot", "adapters")]
    assert trainers == []


HEAVY = ("torch", "transformers", "pandas", "pyarrow", "datasets", "numpy", "tqdm", "sklearn", "scipy",
         "fasttext")


def test_planning_a_paper_grid_imports_no_heavy_module():
    """Snakemake parses the workflow on every call (`-n` too): the config checks and the plan import the real
    method registry, the corpus sources and the task checks, whose modules bind their heavy dependencies
    lazily (vocab_transfer.lazy), so none of them is imported."""
    loaded = _modules_after(
        "import yaml\nfrom vocab_transfer.workflow.config import check_config\n"
        "from vocab_transfer.workflow.plan import Plan\n"
        "for name in ('configs/unks.yaml', 'configs/focus.yaml', 'configs/vocab_swap.yaml', 'config.yaml',\n"
        "             'configs/wechsel.yaml', 'configs/llm_mistral.yaml'):\n"
        "    config = yaml.safe_load(open(name))\n"
        "    check_config(config)\n"
        "    plan = Plan(config)\n"
        "    assert plan.factorizations or 'unks' not in name")
    heavy = [m for m in loaded if m.partition(".")[0] in HEAVY]
    assert heavy == []
    assert ({"vocab_transfer.methods.focus", "vocab_transfer.methods.unks", "vocab_transfer.data.tasks"}
            <= set(loaded))


#: The package's layers, bottom first: a module imports only from its own layer or the layers below it.
LAYERS = (("io", "artifacts", "typed", "lazy", "memory", "mirror", "checkpointing", "tracking", "warm"),
          ("data", "source_model"), ("methods",),
          ("init", "export", "eval", "training", "report"), ("workflow",), ("api", "miniatures"))


def _package_imports():
    """``(file, line, importing module, imported module)`` for every import of a package module,
    function-local ones included."""
    import ast

    root = ROOT / "vocab_transfer"
    for f in sorted(root.rglob("*.py")):
        parts = ("vocab_transfer",) + f.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = module if f.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                names = [f"{target}.{a.name}" for a in node.names] if not node.module else [target]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name.startswith("vocab_transfer."):
                    yield f.relative_to(ROOT), node.lineno, module, name


def test_imports_run_one_way():
    """api, miniatures -> workflow -> report, eval, training, init, export -> methods -> data, source_model ->
    io, artifacts, typed, mirror:
    no module imports from a layer above its own (function-local imports included)."""
    rank = {name: i for i, names in enumerate(LAYERS) for name in names}
    layer = {m: rank[m.split(".")[1]] for _, _, a, b in _package_imports() for m in (a, b) if m.count(".")}
    assert set(rank) >= {m.split(".")[1] for m in layer}  # every part of the package has a layer
    upward = [f"{f}:{line}: {a} imports {b}" for f, line, a, b in _package_imports()
              if a.count(".") and layer[b] > layer[a]]
    assert upward == []


def test_an_init_job_starts_without_transformers_model_code():
    """Init, factorization and the vocabulary's own tokenizers need no model class: importing transformers'
    model code costs about 3 s of each job's start on 2 cores (111 init jobs in the demo)."""
    loaded = _modules_after(
        "import vocab_transfer.init, vocab_transfer.source_model, vocab_transfer.eval.correlation")
    assert "torch" in loaded
    assert [m for m in loaded
            if m in ("transformers.modeling_utils", "transformers.models.auto.modeling_auto")] == []


def test_a_trained_tokenizer_loads_without_torch(tmp_path, sw_tokenizer):
    """A tokenizer-only folder of the generic class loads as that class, identical to AutoTokenizer's, without
    torch (the tokenization, overlap and fastText jobs); a model folder still goes through AutoTokenizer."""
    from transformers import AutoTokenizer

    from vocab_transfer.data.tokenizer import load_tokenizer

    sw_tokenizer.save_pretrained(tmp_path / "tok")
    loaded = _modules_after(f"from vocab_transfer.data.tokenizer import load_tokenizer\n"
                            f"t = load_tokenizer({str(tmp_path / 'tok')!r})\n"
                            f"assert len(t) == {len(sw_tokenizer)}")
    assert "torch" not in loaded
    ours, auto = load_tokenizer(str(tmp_path / "tok")), AutoTokenizer.from_pretrained(tmp_path / "tok")
    texts = ["Mungu akasema, Iwe nuru; ikawa nuru.", "<mask> x  y\tz"]
    assert type(ours) is type(auto)
    assert ours(texts)["input_ids"] == auto(texts)["input_ids"]
    assert ours.all_special_ids == auto.all_special_ids and ours.init_kwargs == auto.init_kwargs


def test_source_layout_is_cached_by_config_and_read_back(tmp_path, monkeypatch):
    """The embedding rows' tensor names come from the architecture built on the meta device once per
    config.json and transformers version; later jobs read them from the cache, and a changed config builds
    them again."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, XLMRobertaConfig, XLMRobertaForMaskedLM

    from vocab_transfer import source_model as sm

    monkeypatch.setenv(sm.LAYOUT_CACHE_ENV, str(tmp_path / "cache"))
    torch.manual_seed(0)
    small = {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32}
    XLMRobertaForMaskedLM(XLMRobertaConfig(vocab_size=50, **small)).save_pretrained(tmp_path / "xlmr")
    GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=2)).save_pretrained(
        tmp_path / "gpt2")
    built = []
    real = sm._meta_model
    monkeypatch.setattr(sm, "_meta_model", lambda d: built.append(d) or real(d))
    first = sm.source_layout(tmp_path / "xlmr")
    assert first.arch == "XLMRobertaForMaskedLM" and not first.causal and "bias" in first.names
    assert sm.source_layout(tmp_path / "xlmr") == first and len(built) == 1  # read back, nothing built
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1
    gpt2 = sm.source_layout(tmp_path / "gpt2")
    assert gpt2.causal and gpt2.arch == "GPT2LMHeadModel" and len(built) == 2
    rows = sm.read_embedding_rows(tmp_path / "xlmr")  # the cached names find the tensors
    assert rows.input.shape == (50, 16) and rows.bias.shape == (50,)
    config = json.loads((tmp_path / "xlmr" / "config.json").read_text())
    (tmp_path / "xlmr" / "config.json").write_text(json.dumps({**config, "tie_word_embeddings": False}))
    untied = sm.source_layout(tmp_path / "xlmr")
    assert len(built) == 3 and "output" in untied.names  # another config, another entry
    for entry in (tmp_path / "cache").glob("*.json"):
        entry.write_text("{not json")  # a damaged entry is built again, not trusted
    assert sm.source_layout(tmp_path / "xlmr") == untied and sm.source_layout(tmp_path / "gpt2") == gpt2
    assert len(built) == 5


def test_no_private_snakemake_attribute_is_read_or_written():
    """The workflow uses Snakemake's public API only (docs/development.md, "Snakemake's API"): no
    ``<obj>._name`` on Snakemake's objects in the Snakefile, the rules, the workflow layer or the workflow
    scripts."""
    pattern = re.compile(
        r"\b(workflow|settings|resource_settings|scheduler|dag|rules|job|jobs|snakemake|executor"
        r"|executor_plugin|logger_manager)\._[A-Za-z]")
    by_name = re.compile(r"getattr\(.*\b(workflow|settings|scheduler|dag|executor)\b.*[\"']_[A-Za-z]")
    files = [ROOT / "Snakefile", *(ROOT / "rules").glob("*.smk"), *(ROOT / "vocab_transfer").rglob("*.py"),
             *(ROOT / "workflow_scripts").glob("*.py")]
    found = [f"{path.relative_to(ROOT)}:{i}: {line.strip()}" for path in files
             for i, line in enumerate(path.read_text().splitlines(), 1)
             if pattern.search(line) or by_name.search(line)]
    assert not found, "\n".join(found)
