from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import ApiError, Elasticsearch


@pytest.fixture
def repository(es_client: Elasticsearch, index_prefix: str, tmp_path: Path) -> Iterator[str]:
    """A filesystem snapshot repository of this test (``<prefix>backups``), removed after;
    skipped when the server cannot use a directory there (its ``path.repo``)."""
    name = f"{index_prefix}backups"
    location = tmp_path / "snapshots"
    location.mkdir()
    try:
        es_client.snapshot.create_repository(
            name=name, repository={"type": "fs", "settings": {"location": str(location)}}
        )
    except ApiError as exc:
        pytest.skip(f"the server cannot use a fs snapshot repository at {location}: {exc}")
    yield name
    client = es_client.options(ignore_status=404)
    body = client.snapshot.get(repository=name, snapshot="_all").body
    for snap in body.get("snapshots") or ():
        client.snapshot.delete(repository=name, snapshot=snap["snapshot"])
    client.snapshot.delete_repository(name=name)
