"""The documentation site (mkdocs.yml, docs/) builds with warnings as errors: a broken link,
an unknown page, a docstring mkdocstrings cannot render or a CLI reference click cannot
produce fails the suite. The build tools come with the test extra."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import esmapper as em
from esmapper.model.info import IndexOptions

ROOT = Path(__file__).resolve().parents[2]
MISSING = (
    "the site's build tools are not installed: pip install -e '.[docs]' (the test extra has them)"
)


def _require_build_tools() -> None:
    for module in ("mkdocs", "mkdocstrings", "mkdocs_click", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"{MISSING}; {module} is missing")


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    _require_build_tools()
    site = tmp_path / "site"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "NO_MKDOCS_2_WARNING": "1",  # Material's notice about its own future, not the build's
    }
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert "WARNING" not in log, log
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "A first example" in home  # the README is the site's home
    assert 'href="from-elasticsearch-dsl/"' in home  # its docs/ links work on the site
    for page in GUIDE_PAGES:  # each guide page is built and in the navigation
        assert f'href="{page}/"' in home and (site / page / "index.html").is_file(), page
    start = (site / "getting-started" / "index.html").read_text(encoding="utf-8")
    assert "Getting started in your own code" in start and 'class="admonition note"' in start
    # the theme: Material, its search, the light/dark toggle and the copy buttons
    assert 'data-md-component="palette"' in home and 'data-md-color-scheme="slate"' in home
    assert "content.code.copy" in home and (site / "search" / "search_index.json").is_file()
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "esmapper.Mapper" in api and "configure_indexes" in api  # from the docstrings
    assert ":class:" not in api
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "esmapper server" in cli and "--lock-wait" in cli  # from click
    assert (site / "changelog" / "index.html").is_file()
    core = (site / "reference" / "core" / "index.html").read_text(encoding="utf-8")
    # the calls a public class inherits from private bases are rendered on it
    for name in INHERITED["Repository"] + INHERITED["Session"]:
        assert f'id="esmapper.{name}"' in core, name
    assert "=====" not in core  # no RST table left as text (the aggregation results)
    assert "<li><code>terms_</code>" in core
    options = (site / "reference" / "index-options" / "index.html").read_text(encoding="utf-8")
    assert "<table>" in options and "<code>routing_field</code>" in options


#: What Repository and Session get from their private bases (the calls used most).
_REPOSITORY_READS = ("find", "find_one", "get", "get_many", "count", "exists", "aggregate")
INHERITED = {
    "Repository": [
        f"Repository.{name}" for name in (*_REPOSITORY_READS, "batch_process", "require", "search")
    ],
    "Session": [f"Session.{name}" for name in ("get", "get_many", "find", "find_one")],
}


def test_the_inherited_calls_are_the_private_bases_own() -> None:
    """The names the site test looks for are inherited (so the test pins the
    ``inherited_members`` option, not a method the class defines itself)."""
    for cls in (em.Repository, em.Session):
        for name in INHERITED[cls.__name__]:
            member = name.split(".")[1]
            assert hasattr(cls, member), name
            assert member not in vars(cls), f"{name} is defined on the class itself"


def index_option_rows(page: str) -> dict[str, list[str]]:
    """The rows of the options table of ``page``: option name -> the other cells."""
    rows: dict[str, list[str]] = {}
    for line in page.splitlines():
        match = re.match(r"\| `(?P<name>[a-z_]+)` \|(?P<rest>.*)\|\s*$", line)
        if match:
            assert match.group("name") not in rows, f"two rows for {match.group('name')}"
            rows[match.group("name")] = [cell.strip() for cell in match.group("rest").split(" | ")]
    return rows


def test_the_index_options_table_lists_exactly_the_options_the_code_accepts() -> None:
    page = (ROOT / "docs" / "reference" / "index-options.md").read_text(encoding="utf-8")
    rows = index_option_rows(page)
    accepted = IndexOptions.option_names()
    assert sorted(set(accepted) - set(rows)) == [], "options without a row in the table"
    assert sorted(set(rows) - set(accepted)) == [], "rows for options the code does not take"
    for name, cells in rows.items():  # type, default, what it does, example
        assert len(cells) == 4 and all(cells), f"{name}: {cells}"
        assert cells[3].startswith(f"`{name} = "), f"{name}: the example sets another option"


def test_the_options_table_reader_sees_rows_and_nothing_else() -> None:
    page = (
        "| Option | Type | Default | What it does | Example |\n|---|---|---|---|---|\n"
        '| `name` | `str` | snake case | The alias. | `name = "x"` |\n'
        "Text naming `kind` in a sentence.\n"
    )
    assert index_option_rows(page) == {
        "name": ["`str`", "snake case", "The alias.", '`name = "x"`']
    }


#: The guide's pages (docs/<page>.md), each in the site's navigation.
GUIDE_PAGES = (
    "getting-started", "models", "querying", "sessions", "signals", "custom-fields", "redis",
    "migrations", "operations", "testing-your-app", "real-cluster", "from-elasticsearch-dsl",
    "performance", "reliability", "architecture",
)  # fmt: skip


def _hook() -> Any:
    spec = importlib.util.spec_from_file_location("docs_hooks_pages", ROOT / "docs/hooks/pages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_links_to_files_are_made_to_work_on_the_site() -> None:
    _require_build_tools()
    hook = _hook()
    known = {"index.md", "changelog.md", "architecture.md", "reference/api.md", "chart.png"}
    files = types.SimpleNamespace(get_file_from_path=lambda name: name if name in known else None)

    def page(name: str) -> Any:
        return types.SimpleNamespace(file=types.SimpleNamespace(src_uri=name))

    readme = (
        "See [the pipeline](docs/architecture.md#the-paths), [bench](bench/README.md), "
        "[changes](CHANGELOG.md), [up](#set-up), [web](https://example.org/x.md).\n"
        "![a chart](docs/chart.png) ![gone](bench/gone.png)\n"
        "```md\n[kept](bench/README.md)\n```\n"
    )
    assert hook.on_page_markdown(readme, page("index.md"), None, files) == (
        "See [the pipeline](architecture.md#the-paths), bench (`bench/README.md` in the "
        "repository), [changes](changelog.md), [up](#set-up), [web](https://example.org/x.md)."
        "\n![a chart](chart.png) gone (`bench/gone.png` in the repository)\n"
        "```md\n[kept](bench/README.md)\n```\n"
    )
    nested = "[home](../../README.md) and [guide](../architecture.md)"
    assert hook.on_page_markdown(nested, page("reference/api.md"), None, files) == (
        "[home](../index.md) and [guide](../architecture.md)"
    )


def test_the_changelog_is_a_keep_a_changelog_file_for_users() -> None:
    """Versions as Keep a Changelog spells them, newest first after ``[Unreleased]``; the
    sections other texts name exist; short enough to read (engineering notes belong in
    commit messages and docs/architecture.md)."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## (.*)$", text, flags=re.MULTILINE)
    assert versions[0] == "[Unreleased]", versions
    for heading in versions[1:]:
        assert re.fullmatch(r"\[\d+\.\d+\.\d+\] - (\d{4}-\d{2}-\d{2}|unreleased)", heading), heading
    headings = set(re.findall(r"^#+ (.*)$", text, flags=re.MULTILINE))
    named = {
        match
        for path in [*(ROOT / "esmapper").rglob("*.py"), *(ROOT / "docs").rglob("*.md")]
        for match in re.findall(r'"([^"\n]+)" in the CHANGELOG', path.read_text("utf-8"))
    }
    assert "Deviations from Foundatio.Repositories" in named  # (esmapper.indexes.reads)
    assert named <= headings, sorted(named - headings)
    assert len(text.splitlines()) < 500, "the changelog is for users: keep entries short"
