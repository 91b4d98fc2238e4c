"""The package's size: lines of ``vocab_transfer/**/*.py`` at one or more git revisions, split into code,
docstrings, comments and blank lines.

A docstring line is a line of the first string of a module, class or function body (Python's ``ast``); a
comment line holds only a comment (a comment after code counts as code); every other non-blank line is code,
multi-line strings and the ``description=`` texts of the config model included. The files are read from git's
object store, so no checkout of the other revisions is needed.

    python benchmarks/core_size.py                  # HEAD
    python benchmarks/core_size.py 3dbe66f HEAD     # side by side
    python benchmarks/core_size.py --files 10 HEAD  # and the 10 largest files
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tokenize
from collections import Counter

KINDS = ("code", "doc", "comment", "blank")


def line_kinds(source: str) -> Counter:
    """How many lines of ``source`` are code, docstring, comment and blank."""
    lines = source.splitlines()
    kinds = ["blank" if not line.strip() else "code" for line in lines]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                kinds[first.lineno - 1:first.end_lineno] = ["doc"] * (first.end_lineno - first.lineno + 1)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and lines[token.start[0] - 1].lstrip().startswith("#"):
            kinds[token.start[0] - 1] = "comment"
    return Counter(kinds)


def package_files(rev: str) -> dict[str, Counter]:
    """Each package file at ``rev`` with its line kinds."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout

    names = [n for n in git("ls-tree", "-r", "--name-only", rev, "--", "vocab_transfer").split()
             if n.endswith(".py")]
    return {n: line_kinds(git("show", f"{rev}:{n}")) for n in names}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("revs", nargs="*", default=["HEAD"], help="git revisions (default: HEAD)")
    p.add_argument("--files", type=int, default=0, help="also list the N largest files of the last revision")
    args = p.parse_args(argv)
    print(f"| revision | files | lines | {' | '.join(KINDS)} |")
    print("|---|---:|---:|" + "---:|" * len(KINDS))
    for rev in args.revs:
        files = package_files(rev)
        total = sum(files.values(), Counter())
        print(f"| {rev} | {len(files)} | {sum(total.values()):,} | "
              + " | ".join(f"{total[k]:,}" for k in KINDS) + " |")
    for name, kinds in sorted(files.items(), key=lambda f: -sum(f[1].values()))[:args.files]:
        print(f"{name:55s} {sum(kinds.values()):6,}  " + "  ".join(f"{k} {kinds[k]:,}" for k in KINDS))


if __name__ == "__main__":
    main()
