"""The documentation site (mkdocs.yml, docs/) builds with warnings as errors: a broken link,
an unknown page, a docstring mkdocstrings cannot render or a CLI reference click cannot
produce fails the suite. The build tools come with the test extra."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

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
