"""The README's "Several processes" blocks run as printed (against the test servers)."""

from __future__ import annotations

import pytest

from esmapper.testing import delete_prefixed
from tests.unit.test_readme_examples import python_blocks


def test_the_redis_section_runs_as_printed(
    es_url: str, redis_url: str, monkeypatch: pytest.MonkeyPatch, es_client: object
) -> None:
    monkeypatch.setenv("ESMAPPER_URL", es_url)
    monkeypatch.setenv("ESMAPPER_REDIS_URL", redis_url)
    blocks = python_blocks("## Several processes: Redis cache and bus")
    assert len(blocks) == 2
    namespace: dict[str, object] = {"__name__": "readme_example"}
    try:
        for block in blocks:
            exec(compile(block, "README.md (several processes)", "exec"), namespace)
    finally:
        delete_prefixed(es_client, "readme-")  # type: ignore[arg-type]
