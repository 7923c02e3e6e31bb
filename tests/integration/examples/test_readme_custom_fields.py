"""The README's Custom fields section runs as printed, against the test server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from esmapper.testing.cleanup import delete_prefixed

README = Path(__file__).resolve().parents[3] / "README.md"
PREFIX = "readme-cf-"


@pytest.fixture
def readme_indexes(es_client: Elasticsearch) -> Iterator[None]:
    delete_prefixed(es_client, PREFIX)
    yield
    delete_prefixed(es_client, PREFIX)


@pytest.mark.usefixtures("readme_indexes")
def test_the_custom_fields_section_runs_as_printed(
    es_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Custom fields\n")
    end = text.index("\n## ", start + 1)
    blocks = re.findall(r"```python\n(.*?)```", text[start:end], re.DOTALL)
    assert len(blocks) == 1
    monkeypatch.setenv("ESMAPPER_URL", es_url)
    exec(compile(blocks[0], f"{README}: Custom fields", "exec"), {"__name__": "readme_cf"})
