"""The shipped text is self-contained: no docstring, comment, example, test or page points at
a file that does not ship with the repository (the project's design notes, its public-API
contract and its feature checklist), by name or by one of their ids. Each place states the
rule it relies on instead. A failure names every offending ``file:line``.

The patterns are assembled from pieces so that this file does not match them itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: What is scanned: the package, the user-facing documents, the examples, the benchmarks and
#: the tests (this file included).
SCANNED_DIRS = ("esmapper", "docs", "examples", "bench", "tests")
SCANNED_FILES = ("README.md", "CHANGELOG.md", "mkdocs.yml")
TEXT_SUFFIXES = frozenset({".py", ".md", ".yml", ".yaml", ".toml", ".cfg", ".txt", ".html"})
SKIPPED_DIRS = frozenset({"__pycache__", "site", "node_modules"})

#: Id families of the feature checklist (``XX-n``, ``XX-*``).
_FAMILIES = (
    *("CA", "CF", "CO", "DX", "ER", "ES", "EV", "G", "ID", "IM", "IX", "JB"),
    *("MB", "MG", "OP", "PA", "P", "QY", "RI", "SD", "SR", "TS", "VA", "VE"),
)
_SPEC_FILES = ("API", "DESIGN", "features".upper())

FORBIDDEN: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "a spec file that does not ship",
        re.compile(r"\b(?:" + "|".join(_SPEC_FILES) + r")\.md\b"),
    ),
    ("the feature checklist by name", re.compile(r"\b" + "features".upper() + r"\b")),
    (
        "a feature id",
        re.compile(r"(?<![\w-])(?:" + "|".join(_FAMILIES) + r")-(?:[0-9]+|\*)(?![\w-])"),
    ),
    ("an open-question id", re.compile(r"\?" + "Q" + r"[0-9]+")),
    ("a decision id", re.compile(r"\b" + "Q" + r"[0-9]+\b")),
    ("a section of the API contract", re.compile("\N{SECTION SIGN}" + r"\s*[0-9]")),
)


def offences(text: str) -> list[tuple[int, str, str]]:
    """``(line number, what, the matched text)`` for every forbidden reference in ``text``."""
    found: list[tuple[int, str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for what, pattern in FORBIDDEN:
            found.extend((number, what, m.group(0)) for m in pattern.finditer(line))
    return found


def scanned_files() -> list[Path]:
    """Every text file of the scanned directories, plus the top-level documents."""
    files = [ROOT / name for name in SCANNED_FILES if (ROOT / name).is_file()]
    for top in SCANNED_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            parts = path.relative_to(ROOT).parts
            if any(p in SKIPPED_DIRS or p.startswith(".") for p in parts):
                continue
            if path.is_file() and path.suffix in TEXT_SUFFIXES:
                files.append(path)
    return files


def test_the_scan_covers_the_package_docs_examples_bench_and_tests() -> None:
    files = {p.relative_to(ROOT).as_posix() for p in scanned_files()}
    for expected in (
        "README.md",
        "CHANGELOG.md",
        "mkdocs.yml",
        "esmapper/__init__.py",
        "esmapper/indexes/reindex.py",
        "docs/architecture.md",
        "tests/unit/test_docs_self_contained.py",
    ):
        assert expected in files
    assert any(f.startswith("examples/") for f in files)
    assert any(f.startswith("bench/") for f in files)


def test_no_shipped_text_cites_files_that_do_not_ship() -> None:
    problems: list[str] = []
    for path in scanned_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        rel = path.relative_to(ROOT).as_posix()
        problems.extend(
            f"{rel}:{number}: {what} ({match!r})" for number, what, match in offences(text)
        )
    assert not problems, (
        "state the rule itself instead of pointing at files that do not ship:\n"
        + "\n".join(problems)
    )


@pytest.mark.parametrize(
    "line",
    [
        "Options (" + "API" + ".md \N{SECTION SIGN}5) are keyword arguments",
        "see " + "DESIGN" + ".md for the layers",
        "as " + "FEAT" + "URES says",
        "(" + "QY" + "-30; default DEBUG)",
        "merge (" + "QY" + "-24..26)",
        "(" + "IM" + "-15/" + "IM" + "-16)",
        "(" + "PA" + "-*, RI-" + "11)",
        "(" + "P" + "-15)",
        "(decision " + "Q" + "30)",
        "ambiguous (?" + "Q" + "14)",
        "the default (" + "Q" + "24).",
        "keyed as in \N{SECTION SIGN}" + "4",
    ],
)
def test_each_kind_of_citation_is_caught(line: str) -> None:
    assert offences(line), line


@pytest.mark.parametrize(
    "line",
    [
        "each \u00e9 is 2 UTF-8 bytes",
        "dates as ISO-8601 text",
        "the RFC 3986 unreserved set",
        "U+D800-U+DFFF",
        "A-Z a-z 0-9",
        "features of the reference library (Foundatio.Repositories)",
        "a SHA-256 digest, an X-Opaque-Id header, HTTP/1.1, page 2 of 10",
        "Question Q&A, QUERY-1, MIG-2, the EUR-1 form",
    ],
)
def test_ordinary_text_is_not_flagged(line: str) -> None:
    assert offences(line) == []


def test_an_offence_names_its_line() -> None:
    text = "first line\nsecond (" + "CF" + "-11) line\n"
    assert offences(text) == [(2, "a feature id", "CF" + "-11")]
