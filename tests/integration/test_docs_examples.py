"""Every Python block of README.md and of the pages under docs/ runs as printed.

The blocks of one document run in order, in one namespace (a later block uses what an
earlier one defined, as a reader pasting them into one session would), against a local
server of their own (the documents use fixed index names such as ``employees``, which must
never meet another test's, or a real cluster's) whose URL is ``ESMAPPER_URL``, as for a
reader who ran ``esmapper server`` and exported it. Each document (the README, each page of
the guide) starts from an empty server: what an earlier one left is deleted first, so two
pages may declare ``employees`` differently, as two readers' sessions would. Tracebacks
give the document's own line numbers.

A document that sets up something once per process (Django's settings) runs in a Python
process of its own (:data:`OWN_PROCESS`, with the reason), its blocks in order in one module
named after it, which Django may import (``ROOT_URLCONF = __name__``).

Documents and blocks are found, not listed: a section added to the README later is run
too. A block that cannot run here says so in an HTML comment on the line before it, with
the reason shown to readers of the source: ``<!-- not run: needs a Flask app -->``. Such
exceptions are kept few (:data:`MAX_NOT_RUN`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import types
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.testing import LocalServer, ServerStartError
from esmapper.testing.cleanup import delete_prefixed

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MAX_NOT_RUN = 3
#: The documents run in a Python process of their own, and why.
OWN_PROCESS = {
    "docs/django.md": "Django's settings are configured once per process",
}
"""How many blocks may be marked ``not run`` in all: a block that cannot run is a block
nobody checks, so each one needs a reason and they stay few."""

_FENCE = re.compile(
    r"^(?P<indent>[ ]{0,3})(?P<fence>```+|~~~+)[ ]*(?P<info>[^\n`]*)\n"
    r"(?P<body>.*?)"
    r"^(?P=indent)(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.*?)\s*-->")


@dataclass(frozen=True)
class Block:
    """A Python block of a document: where its code starts, its code, and why it is not run
    (``None``: it runs)."""

    path: Path
    line: int
    source: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def python_blocks(path: Path) -> list[Block]:
    """The ```` ```python ```` (or ``py``) blocks of ``path``, in order."""
    text = path.read_text(encoding="utf-8")
    found: list[Block] = []
    for match in _FENCE.finditer(text):
        language = (match.group("info").split() or [""])[0].lower()
        if language not in ("python", "py", "python3"):
            continue
        before = text[: match.start()].rstrip().splitlines()
        marker = _NOT_RUN.fullmatch(before[-1].strip()) if before else None
        line = text.count("\n", 0, match.start("body")) + 1
        source = textwrap.dedent(match.group("body"))
        found.append(Block(path, line, source, marker.group("reason") if marker else None))
    return found


def _document_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture(scope="module")
def docs_server() -> Iterator[str]:
    """A local server for the documents alone (fresh, so fixed index names are free)."""
    try:
        server = LocalServer().start()
    except ServerStartError as exc:  # pragma: no cover - noida-db comes with the test extra
        pytest.skip(f"the documents run against the local server, which cannot start: {exc}")
    try:
        yield server.url
    finally:
        server.stop()


def left_on(client: Elasticsearch) -> set[str]:
    """The indexes, index templates and ingest pipelines on the server (the names of what a
    document may leave behind)."""
    names = set(client.indices.get(index="*", expand_wildcards="all").body)
    templates = client.indices.get_index_template().body.get("index_templates", [])
    names.update(template["name"] for template in templates)
    names.update(client.ingest.get_pipeline().body)
    return names


def empty_server(url: str) -> None:
    """Delete what earlier documents left on the documents' server: everything, by exact
    name (aliases and component templates with their prefix)."""
    client = Elasticsearch(url)
    try:
        for first in sorted({name[0] for name in left_on(client)}):
            delete_prefixed(client, first)
        assert left_on(client) == set(), "the documents' server could not be emptied"
    finally:
        client.close()


def _receivers() -> dict[str, set[Any]]:
    return {name: set(signal.receivers) for name, signal in em.signals.namespace.items()}


def _disconnect_added(before: dict[str, set[Any]]) -> None:
    """Disconnect the signal receivers a document connected (they are held strongly and
    would otherwise run during every later test)."""
    for name, signal in em.signals.namespace.items():
        for key in set(signal.receivers) - before.get(name, set()):
            receiver = signal.receivers.get(key)
            if isinstance(receiver, weakref.ref):
                receiver = receiver()
            if receiver is not None:
                signal.disconnect(receiver)


def run_document(path: Path, url: str, monkeypatch: pytest.MonkeyPatch, cwd: Path) -> int:
    """Run the runnable blocks of ``path`` in order, in one namespace, on an emptied server;
    returns how many."""
    blocks = [b for b in python_blocks(path) if b.not_run is None]
    empty_server(url)
    monkeypatch.setenv("ESMAPPER_URL", url)
    monkeypatch.chdir(cwd)
    namespace: dict[str, Any] = {"__name__": f"docs_{path.stem.replace('-', '_')}"}
    receivers = _receivers()
    try:
        for block in blocks:
            padded = "\n" * (block.line - 1) + block.source  # the document's line numbers
            exec(compile(padded, str(path), "exec"), namespace)
    finally:
        _disconnect_added(receivers)
        for value in namespace.values():
            if isinstance(value, em.Mapper):
                value.close()
    return len(blocks)


def _exec_blocks(path: Path) -> int:
    """Run the runnable blocks of ``path`` in order in a new module registered in
    ``sys.modules`` (the other process of :func:`run_in_own_process`); returns how many."""
    blocks = [b for b in python_blocks(path) if b.not_run is None]
    module = types.ModuleType(f"docs_{path.stem.replace('-', '_')}")
    sys.modules[module.__name__] = module
    for block in blocks:
        padded = "\n" * (block.line - 1) + block.source  # the document's line numbers
        exec(compile(padded, str(path), "exec"), module.__dict__)
    return len(blocks)


def run_in_own_process(path: Path, url: str, cwd: Path) -> int:
    """:func:`run_document` in another Python process (started in ``cwd``, with
    ``ESMAPPER_URL``); returns how many blocks ran, fails with the process's traceback."""
    empty_server(url)
    env = {**os.environ, "ESMAPPER_URL": url}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env.pop("DJANGO_SETTINGS_MODULE", None)
    command = [sys.executable, "-m", "tests.integration.test_docs_examples", str(path)]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{_document_id(path)} failed:\n{done.stderr}"
    return int(done.stdout.split()[-1])


#: The guide's pages with Python blocks (each runs on its own, from an empty server).
GUIDE = (
    "getting-started", "models", "querying", "sessions", "signals", "custom-fields", "redis",
    "migrations", "operations", "testing-your-app", "from-elasticsearch-dsl", "django",
)  # fmt: skip


def test_the_documents_are_found() -> None:
    names = {_document_id(p) for p in RUNNABLE}
    assert {"README.md", *(f"docs/{page}.md" for page in GUIDE)} <= names
    assert python_blocks(ROOT / "README.md"), "no Python block found in README.md"


_ANY_PYTHON_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ ]*(python3?|py)\b", re.MULTILINE)


def test_no_python_block_is_left_out() -> None:
    """A fence the harness does not read (indented four spaces or more, inside an admonition
    or a quote) would be a block nobody runs."""
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        fences = len(_ANY_PYTHON_FENCE.findall(text))
        assert len(python_blocks(path)) == fences, f"{_document_id(path)}: a block is not read"


def test_each_document_starts_from_an_empty_server(docs_server: str) -> None:
    client = Elasticsearch(docs_server)
    try:
        client.indices.create(index="employees-v1", aliases={"employees": {}})
        client.indices.put_index_template(name="visits", index_patterns=["visits-*"])
        client.ingest.put_pipeline(id="employees-pipeline", processors=[])
        assert {"employees-v1", "visits", "employees-pipeline"} <= left_on(client)
        empty_server(docs_server)
        assert left_on(client) == set()
        assert not client.indices.exists_alias(name="employees")
    finally:
        client.close()


RUNNABLE = [p for p in DOCUMENTS if any(b.not_run is None for b in python_blocks(p))]


@pytest.mark.parametrize("path", RUNNABLE, ids=_document_id)
def test_the_python_blocks_run_as_printed(
    path: Path, docs_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if _document_id(path) in OWN_PROCESS:
        assert run_in_own_process(path, docs_server, tmp_path) > 0
    else:
        assert run_document(path, docs_server, monkeypatch, tmp_path) > 0


def test_blocks_not_run_say_why_and_are_few() -> None:
    skipped = [b for path in DOCUMENTS for b in python_blocks(path) if b.not_run is not None]
    assert all(b.not_run for b in skipped), [b.where for b in skipped if not b.not_run]
    assert len(skipped) <= MAX_NOT_RUN, (
        "too many blocks are marked 'not run' (each is a block nobody checks): "
        + ", ".join(f"{b.where} ({b.not_run})" for b in skipped)
    )


def test_the_harness_reads_markers_indents_and_line_numbers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n```python\nx = 1\n```\n\n<!-- not run: needs a Flask app -->\n"
        "```python\nimport flask_app\n```\n\n- item\n\n  ```py\n  y = x + 1\n  ```\n"
        "\n```sh\nexit 1\n```\n",
        encoding="utf-8",
    )
    blocks = python_blocks(page)
    assert [(b.line, b.source, b.not_run) for b in blocks] == [
        (4, "x = 1\n", None),
        (9, "import flask_app\n", "needs a Flask app"),
        (15, "y = x + 1\n", None),
    ]
    failing = tmp_path / "failing.md"
    failing.write_text("text\n\n```python\n\nraise ValueError('line 5')\n```\n", "utf-8")
    with pytest.raises(ValueError) as raised:
        exec(compile("\n" * 3 + python_blocks(failing)[0].source, str(failing), "exec"), {})
    assert raised.traceback[-1].lineno + 1 == 5


if __name__ == "__main__":  # one document, in this process: see run_in_own_process
    print(_exec_blocks(Path(sys.argv[1])))
