"""Per-call query logging : ``query_log_level`` on every search."""

from __future__ import annotations

import logging

import pytest

import esmapper as em
from esmapper.options import TRACE
from tests.integration.conftest import MakeMapper
from tests.integration.indexes.models import ItemV1


def test_searches_are_logged_at_the_calls_level_with_their_target(
    make_mapper: MakeMapper, index_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    mapper = make_mapper(ItemV1)
    repo = mapper.repository(ItemV1)
    repo.add(ItemV1(name="a"), consistency="immediate")
    alias = f"{index_prefix}items"
    with caplog.at_level(TRACE, logger="esmapper.query"):
        repo.find("name:a", query_log_level="trace")
        repo.count(query_log_level=logging.INFO)
        repo.find("name:a")  # the default: DEBUG
        repo.patch_all("name:a", em.ScriptPatch("ctx._source.n = 1"), query_log_level="info")
    records = [(r.levelname, r.getMessage().split(" ")[:2]) for r in caplog.records
               if r.name == "esmapper.query"]  # fmt: skip
    assert records == [
        ("TRACE", ["search", alias]),
        ("INFO", ["search", alias]),
        ("DEBUG", ["search", alias]),
        ("INFO", ["update_by_query", alias]),
    ]
    assert "'name': 'a'" in caplog.records[0].getMessage()  # the compiled body
    with pytest.raises(ValueError, match="query_log_level"):
        repo.find(query_log_level="loud")
