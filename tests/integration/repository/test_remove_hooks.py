"""``repo.remove(ids)`` with hooks loads the documents, then deletes them at the version
loaded: a document changed in between is loaded again and deleted at its new version, so
the hooks always see the content that was deleted (never an older one)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from elasticsearch import ConflictError, Elasticsearch, NotFoundError

import esmapper as em
from esmapper import signals
from tests.integration.conftest import MakeMapper

from .models import Employee


@pytest.fixture
def repo(make_mapper: MakeMapper) -> em.Repository[Employee]:
    return make_mapper(Employee, configure=True).repository(Employee)


def test_a_change_between_the_load_and_the_delete_is_loaded_again(
    repo: em.Repository[Employee], es_client: Elasticsearch
) -> None:
    repo.add(Employee(id="e1", name="Old"), consistency="wait")
    removing: list[str] = []
    removed: list[str] = []

    def before(sender: Any, documents: list[em.ModifiedDocument], **kwargs: Any) -> None:
        removing.extend(d.value.name for d in documents)
        if len(removing) == 1:  # another writer changes it after the load
            es_client.update(index=repo.spec.alias, id="e1", doc={"name": "New"}, refresh=True)

    def after(sender: Any, documents: list[em.ModifiedDocument], **kwargs: Any) -> None:
        removed.extend(d.value.name for d in documents)

    with (
        signals.documents_removing.connected_to(before, sender=Employee),
        signals.documents_removed.connected_to(after, sender=Employee),
    ):
        repo.remove(["e1"])
    assert removing == ["Old", "New"]  # called again with what was then stored
    assert removed == ["New"]  # the content that was deleted
    assert repo.get("e1", cache=False) is None


def test_a_document_that_kept_changing_is_reported_not_deleted(
    repo: em.Repository[Employee], es_client: Elasticsearch
) -> None:
    repo.add(Employee(id="e1", name="v0"), consistency="wait")
    changes = iter(range(1, 100))

    def before(sender: Any, documents: list[em.ModifiedDocument], **kwargs: Any) -> None:
        es_client.update(
            index=repo.spec.alias, id="e1", doc={"name": f"v{next(changes)}"}, refresh=True
        )

    with (
        signals.documents_removing.connected_to(before, sender=Employee),
        pytest.raises(em.VersionConflictError, match="kept changing") as caught,
    ):
        repo.remove(["e1"], retries=2)
    assert list(caught.value.ids) == ["e1"]
    assert repo.get("e1", cache=False) is not None  # never deleted blindly


def _remove_while_written(repo: em.Repository[Employee], es: Elasticsearch, doc_id: str) -> None:
    """Remove ``doc_id`` while a thread updates it in a loop; the update that last
    succeeded before the delete is what the removed hook must show."""
    repo.add(Employee(id=doc_id, name="w0"), consistency="wait")
    written: list[str] = []
    removed: list[str] = []
    stop = threading.Event()

    def write() -> None:
        for i in range(1, 10_000):
            if stop.is_set():
                return
            try:
                es.update(index=repo.spec.alias, id=doc_id, doc={"name": f"w{i}"}, refresh=True)
            except NotFoundError:
                return  # deleted: every later update fails too
            except ConflictError:
                continue
            written.append(f"w{i}")

    def after(sender: Any, documents: list[em.ModifiedDocument], **kwargs: Any) -> None:
        removed.extend(d.value.name for d in documents)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        with signals.documents_removed.connected_to(after, sender=Employee):
            for _attempt in range(20):
                try:
                    repo.remove([doc_id], retries=10)
                    break
                except em.VersionConflictError:
                    continue
    finally:
        stop.set()
        writer.join(60)
    assert repo.get(doc_id, cache=False) is None
    assert removed == [written[-1] if written else "w0"]  # 0 stale


def test_concurrent_writer_hooks_see_the_deleted_content(
    repo: em.Repository[Employee], es_client: Elasticsearch
) -> None:
    for round_ in range(5):
        _remove_while_written(repo, es_client, f"c{round_}")
