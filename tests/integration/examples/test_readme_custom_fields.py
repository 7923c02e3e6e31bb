"""The README's Custom fields section runs as printed, against the test server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from esmapper.testing.cleanup import delete_prefixed

README = Path(__file__).resolve().parents[3] / "README.md"
PREFIXES = ("readme-cf-", "readme-vcf-")


@pytest.fixture
def readme_indexes(es_client: Elasticsearch) -> Iterator[None]:
    for prefix in PREFIXES:
        delete_prefixed(es_client, prefix)
    yield
    for prefix in PREFIXES:
        delete_prefixed(es_client, prefix)


@pytest.mark.usefixtures("readme_indexes")
def test_the_custom_fields_section_runs_as_printed(
    es_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Custom fields\n")
    end = text.index("\n## ", start + 1)
    blocks = re.findall(r"```python\n(.*?)```", text[start:end], re.DOTALL)
    assert len(blocks) == 2  # a dict model, then a virtual one, in one namespace
    monkeypatch.setenv("ESMAPPER_URL", es_url)
    namespace = {"__name__": "readme_cf"}
    for block in blocks:
        exec(compile(block, f"{README}: Custom fields", "exec"), namespace)
