"""The guide's Custom fields page runs as printed against the suite's server (a real cluster
too, with ``ESMAPPER_TEST_URL`` or ``--real-es``; the documents' own run uses a local
server). Its blocks run in order, in one namespace, as a reader pasting them would."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from esmapper.testing.cleanup import delete_prefixed

PAGE = Path(__file__).resolve().parents[3] / "docs" / "custom-fields.md"
#: The index prefixes the page's mappers use (deleted before and after, and nothing else).
PREFIXES = ("example-crm-", "example-erp-")


@pytest.fixture
def page_indexes(es_client: Elasticsearch) -> Iterator[None]:
    for prefix in PREFIXES:
        delete_prefixed(es_client, prefix)
    yield
    for prefix in PREFIXES:
        delete_prefixed(es_client, prefix)


def test_the_page_uses_only_the_cleaned_prefixes() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert sorted(set(re.findall(r'index_prefix="([^"]*)"', text))) == sorted(PREFIXES)


@pytest.mark.usefixtures("page_indexes")
def test_the_custom_fields_page_runs_as_printed(
    es_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert len(blocks) == 2  # a dict model, then a virtual one, in one namespace
    monkeypatch.setenv("ESMAPPER_URL", es_url)
    namespace = {"__name__": "docs_custom_fields"}
    for block in blocks:
        exec(compile(block, f"{PAGE}", "exec"), namespace)
