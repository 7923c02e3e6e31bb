"""The worked example of docs/from-elasticsearch-dsl.md runs as printed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from esmapper.testing.cleanup import delete_prefixed

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "from-elasticsearch-dsl.md"


@pytest.fixture
def guide_indexes(es_client: Elasticsearch) -> Iterator[None]:
    delete_prefixed(es_client, "guide-books")
    yield
    delete_prefixed(es_client, "guide-books")


@pytest.mark.usefixtures("guide_indexes")
def test_the_worked_example_runs_as_printed(es_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 1
    monkeypatch.setenv("ESMAPPER_URL", es_url)
    exec(compile(blocks[0], str(GUIDE), "exec"), {"__name__": "dsl_guide"})
