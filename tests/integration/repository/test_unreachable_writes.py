"""A write whose ``_bulk`` could not connect at all (the server went away after the
indexes were made: connection refused) was not sent, so it was not applied: it fails
naming the URL, and is not reported as "sent, outcome unknown"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import esmapper as em
from esmapper.bulk import NOT_SENT
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper

from .models import Message

WRITES: dict[str, Callable[[em.Repository[Message], Message], Any]] = {
    "add": lambda r, _m: r.add(Message(tenant="t", message_id="m2", handler_type="h")),
    "save": lambda r, m: r.save(m),
    "remove": lambda r, m: r.remove(m),
    "patch": lambda r, m: r.patch(m.id, em.PartialPatch({"body": "x"})),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_that_could_not_connect_was_not_sent(
    make_mapper: MakeMapper, proxy: FaultProxy, write: str
) -> None:
    mapper = make_mapper(Message, url=proxy.url, configure=True)
    repo = mapper.repository(Message)
    stored = repo.add(Message(tenant="t", message_id="m", handler_type="h"), consistency="wait")
    proxy.stop()  # nothing listens there any more: every connection is refused
    with pytest.raises(em.DocumentError) as raised:
        WRITES[write](repo, stored)
    error = raised.value
    assert not isinstance(error, em.OutcomeUnknownError)
    assert error.error_type == NOT_SENT
    assert f"cannot reach Elasticsearch at {proxy.url}" in str(error)
