"""Small helpers for the wording of messages and reports."""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["article", "table"]


def article(word: str) -> str:
    """``word`` with its indefinite article, by its first letter: ``an Employee``, ``an
    int``, ``a Team``, ``a User`` (a ``u`` is read as "you", the usual case in names)."""
    return f"{'an' if word[:1].lower() in ('a', 'e', 'i', 'o') else 'a'} {word}"


def table(rows: list[list[str]]) -> Iterator[str]:
    """The lines of ``rows`` as a table: each column as wide as its widest cell (the CLI's
    tables and :meth:`esmapper.health.HealthReport.lines`)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        yield "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
