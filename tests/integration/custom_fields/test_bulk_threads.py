"""Review of ``bulk_concurrency`` with a custom-field model: a definition added while the
chunks are in flight (one of them losing its answer after the server applied it) still
reaches every written document's ``idx``, and the objects in hand hold the stored
version (their next save is no conflict)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import esmapper as em
from esmapper.testing.faults import FaultProxy

from .test_review_definition_races import Racer, _hooks, _setup


@pytest.fixture
def tmapper(proxy: FaultProxy, index_prefix: str) -> Iterator[em.Mapper]:
    with em.Mapper(
        proxy.url,
        models=[Racer],
        index_prefix=index_prefix,
        bulk_chunk_size=4,
        bulk_concurrency=3,
        sleep=lambda _s: None,
    ) as m:
        m.configure_indexes()
        yield m
    _hooks.clear()


def test_a_field_added_while_threads_write_reaches_every_document(
    tmapper: em.Mapper, proxy: FaultProxy
) -> None:
    fields, repo = _setup(tmapper)
    _hooks.append(lambda: fields.add_field("acme", "Grade", "int"))
    racers = [
        Racer(name=f"r{i}", company_id="acme", custom_fields={"Hook": "x", "Grade": i})
        for i in range(30)
    ]
    proxy.drop_connection(path=r"/_bulk$", after_forwarding=True, skip=2)
    repo.add(racers, consistency="immediate")
    assert not _hooks and proxy.pending_faults == 0
    assert repo.count("grade:>=0", tenant="acme") == 30
    alias = tmapper.spec(Racer).alias
    for racer in racers:
        hit = tmapper.client.get(index=alias, id=racer.id or "").body
        assert hit["_source"]["idx"] == {"hook-1": "x", "int-2": int(racer.name[1:])}
        assert racer.idx == hit["_source"]["idx"]
        assert racer.version == f"{hit['_primary_term']}:{hit['_seq_no']}"
    for racer in racers:
        racer.name += "!"
    repo.save(racers, consistency="immediate")  # current versions: no conflict
    assert repo.count("grade:>=0", tenant="acme") == 30
