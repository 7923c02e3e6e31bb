"""Re-keying a model whose repository keeps documents under keys of its own (the cache
hooks of issue 30): the move is a write behind the write pipeline, and the hook still
sees both documents, so a key holding the old id is not served after the move."""

from __future__ import annotations

from typing import Any

from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.cache import InMemoryCache
from esmapper.rekey import rekey
from esmapper.signals import ChangeType, ModifiedDocument
from tests.integration.conftest import MakeMapper

from .test_rekey import Inbox, msg, put


class InboxRepository(em.Repository[Inbox]):
    """Keeps a message cached under ``msg:<message_id>``."""

    def __init__(self, mapper: em.Mapper, model: type[Inbox]) -> None:
        super().__init__(mapper, model)
        self.seen: list[tuple[ChangeType, list[str | None]]] = []

    def by_message(self, message_id: str) -> Inbox | None:
        query = f'message_id:"{message_id}"'
        return self.find_one(query, cache_key=f"msg:{message_id}", consistency="immediate")

    def invalidate_cache_for(
        self, documents: list[ModifiedDocument], change_type: ChangeType
    ) -> None:
        self.seen.append((change_type, [d.value and d.value.id for d in documents]))
        messages = em.union_original_and_modified(documents)
        self.invalidate_cache([f"msg:{m.message_id}" for m in messages])


def test_a_rekeyed_document_is_not_served_under_its_old_id(
    make_mapper: MakeMapper, es_client: Elasticsearch
) -> None:
    mapper = make_mapper(Inbox, configure=True, cache=InMemoryCache())
    mapper.register(Inbox, repository=InboxRepository)
    inbox = mapper.repository(Inbox)
    assert isinstance(inbox, InboxRepository)
    put(es_client, mapper.spec(Inbox).physical_name(), "acme_42_H", **msg("acme", "42", "H"))
    before: Any = inbox.by_message("42")
    assert before is not None and before.id == "acme_42_H"
    report = rekey(mapper, Inbox, apply=True, echo=lambda _line: None)
    assert report.rewritten == 1
    assert inbox.seen == [
        (ChangeType.REMOVED, ["acme_42_H"]),
        (ChangeType.ADDED, ["acme:42:H"]),
    ]
    after = inbox.by_message("42")
    assert after is not None and after.id == "acme:42:H"
