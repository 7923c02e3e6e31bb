"""Count the lines of the package at a commit: all of them, the code, the documentation.

    python -m tools.code_lines 8bb7d11 HEAD        # totals at each commit
    python -m tools.code_lines 8bb7d11 HEAD --files  # and the change per file

Every ``.py`` file under ``esmapper/`` at the commit (read with ``git show``, so the work
tree does not matter) is split into:

- ``code``: lines holding a token outside docstrings and comments (a statement spread
  over three lines counts three);
- ``doc``: lines of a module, class or function docstring, and lines holding only a
  comment;
- the rest is blank (or a lone string that is no docstring).

Issue 27's "the package does not grow" is measured with it: ``total`` is ``wc -l``, and
``code`` tells the code apart from the documentation that came with it.
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tokenize
from typing import NamedTuple

__all__ = ["Lines", "count", "count_commit"]

_NOT_CODE = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
)
_SCOPES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


class Lines(NamedTuple):
    """The lines of one file, or of many added up."""

    total: int = 0
    code: int = 0
    doc: int = 0

    def __add__(self, other: object) -> Lines:
        if not isinstance(other, Lines):
            return NotImplemented
        return Lines(self.total + other.total, self.code + other.code, self.doc + other.doc)

    def __sub__(self, other: Lines) -> Lines:
        return Lines(self.total - other.total, self.code - other.code, self.doc - other.doc)


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, _SCOPES) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def count(source: str) -> Lines:
    """The lines of one Python source (see the module docstring)."""
    docs = _docstring_lines(ast.parse(source))
    code: set[int] = set()
    comments: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments.add(token.start[0])
        elif token.type not in _NOT_CODE:
            code.update(n for n in range(token.start[0], token.end[0] + 1) if n not in docs)
    return Lines(len(source.splitlines()), len(code), len(docs | (comments - code)))


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def count_commit(commit: str, package: str = "esmapper") -> dict[str, Lines]:
    """Each ``.py`` file of ``package`` at ``commit``, counted."""
    names = _git("ls-tree", "-r", "--name-only", commit, package).split()
    return {name: count(_git("show", f"{commit}:{name}")) for name in names if name.endswith(".py")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commits", nargs="+", help="the commits to count (the first is the base)")
    parser.add_argument("--files", action="store_true", help="the change per file, after the base")
    args = parser.parse_args(argv)
    counted = [count_commit(commit) for commit in args.commits]
    for commit, files in zip(args.commits, counted, strict=True):
        total = sum(files.values(), Lines())
        print(f"{commit}: {total.total} lines, {total.code} code, {total.doc} doc/comment")
    if args.files and len(counted) > 1:
        base, last = counted[0], counted[-1]
        changes = {name: last.get(name, Lines()) - base.get(name, Lines()) for name in base | last}
        for name, change in sorted(changes.items(), key=lambda item: item[1].total):
            if change != Lines():
                print(f"{change.total:+6} total {change.code:+6} code {change.doc:+6} doc  {name}")


if __name__ == "__main__":
    main()
