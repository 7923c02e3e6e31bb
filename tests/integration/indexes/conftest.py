from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import esmapper as em

MakeMapper = Callable[..., em.Mapper]


@pytest.fixture
def make_mapper(es_url: str, index_prefix: str) -> Iterator[MakeMapper]:
    """``make_mapper(*models, clock=None, url=None)``: a Mapper on this test's prefix (on
    ``url``, e.g. a FaultProxy's, instead of the test server's), closed after."""
    made: list[em.Mapper] = []

    def make(
        *models: type, clock: Callable[[], dt.datetime] | None = None, url: str | None = None
    ) -> em.Mapper:
        options: dict[str, Any] = {} if clock is None else {"clock": clock}
        mapper = em.Mapper(url or es_url, models=list(models), index_prefix=index_prefix, **options)
        for model in mapper.models:
            spec = mapper.spec(model)
            if spec.client is None:  # until Mapper binds the specs it creates
                spec.bind(mapper.client, mapper.clock)
        made.append(mapper)
        return mapper

    yield make
    for mapper in made:
        mapper.close()


class FakeClock:
    """A settable clock for ``Mapper(clock=...)``."""

    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now
