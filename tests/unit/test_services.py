"""The mapper's Services: what the core and the features are handed instead of the Mapper.

Nothing goes over the network: the mappers point at a closed port (port 9, discard) and
the steps that would send are replaced by recorders.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from werkzeug.local import LocalProxy

import esmapper as em
from esmapper import repository as repository_module
from esmapper import session as session_module
from esmapper._context import context_of
from esmapper._services import Services
from esmapper.bulk import BulkWriter
from esmapper.errors import IndexConfigurationError
from esmapper.indexes import reindex_partitions
from esmapper.jobs import Job, JobContext, JobResult


class Note(em.Document):
    class Index:
        name = "note"

    text: str = em.field(em.Keyword(), default="")


class Memo(em.Document):
    class Index:
        name = "note"  # the same alias as Note: refused

    text: str = em.field(em.Keyword(), default="")


class Ticket(em.Document, em.HasCustomFields):
    class Index:
        name = "ticket"

    title: str = em.field(em.Keyword(), default="")


@pytest.fixture
def mapper() -> Iterator[em.Mapper]:
    with em.Mapper("http://127.0.0.1:9", models=[Note], index_prefix="unit_") as m:
        yield m


def test_the_mapper_builds_one_services_that_is_not_the_mapper(mapper: em.Mapper) -> None:
    services = mapper.services
    assert isinstance(services, Services)
    assert not isinstance(services, em.Mapper)
    assert services.index_prefix == "unit_"
    assert services.writer is mapper.writer
    assert services.documents is mapper.documents
    assert services.cache is mapper.cache
    assert services.bus is mapper.bus
    assert services.base_client is mapper.client  # no call timeout: the base client


def test_replacing_the_writer_or_the_clock_on_the_mapper_replaces_the_services(
    mapper: em.Mapper,
) -> None:
    writer = BulkWriter(mapper.client)
    mapper.writer = writer
    assert mapper.services.writer is writer
    moment = dt.datetime(2020, 1, 2, tzinfo=dt.timezone.utc)
    mapper.clock = lambda: moment
    assert mapper.services.clock() == moment


def test_the_registry_of_index_specs_is_the_services(mapper: em.Mapper) -> None:
    assert mapper.models == [Note] == mapper.services.models
    assert mapper.spec(Note) is mapper.services.spec(Note)
    spec = mapper.services.spec(Ticket)  # registered on first use, by the services
    assert mapper.spec(Ticket) is spec
    # a custom-field model brings its definitions along (the mapper's hook)
    assert mapper.models == [Note, Ticket, em.CustomFieldDefinition]


def test_the_registry_refuses_what_it_refused_before(mapper: em.Mapper) -> None:
    with pytest.raises(IndexConfigurationError, match="both use index"):
        mapper.services.register(Memo)
    with pytest.raises(TypeError, match="not an esmapper Document"):
        mapper.register(int)


def test_repositories_come_from_the_mapper_through_its_callback(mapper: em.Mapper) -> None:
    repo = mapper.services.repository(Note)
    assert repo is mapper.repository(Note)
    assert repo.mapper is mapper
    assert repo.services is mapper.services


def test_services_of_no_mapper_have_no_repositories(mapper: em.Mapper) -> None:
    alone = Services(mapper.client, mapper.writer, "", mapper.clock, None, mapper.bus)
    assert alone.documents is None
    with pytest.raises(TypeError, match="no repositories"):
        alone.repository(Note)


def test_extensions_are_kept_once_per_services(mapper: em.Mapper) -> None:
    made: list[str] = mapper.services.extension("test", list)
    again: object = mapper.services.extension("test", dict)
    assert again is made


def _recording(calls: list[Any]) -> Any:
    def write_documents(ctx: Any, pendings: Any, options: Any, **kwargs: Any) -> None:
        calls.append(ctx)

    return write_documents


def test_a_repository_write_hands_the_pipeline_the_services(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(repository_module, "write_documents", _recording(calls))
    mapper.repository(Note).add(Note(text="a"))
    assert calls == [mapper.services]


def test_a_session_flush_hands_the_pipeline_the_services(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(session_module, "write_documents", _recording(calls))
    s = mapper.session()
    s.add(Note(text="a"))
    s.flush()
    assert calls == [mapper.services]


def test_a_listing_gets_the_services(mapper: em.Mapper) -> None:
    listing = mapper.repository(Note)._listing()
    assert listing.ctx is mapper.services


# -- what users hand the operations: the mapper, or a proxy of it -------------------------------


class _CountModels(Job):
    """A user's job, written as esmapper.jobs documents it (subclass, set name, execute)."""

    name = "count-models"

    @property
    def lock_name(self) -> str | None:
        return None

    def execute(self, ctx: JobContext) -> JobResult:
        return JobResult.success(self.name, f"{len(self.mapper.models)} models")


def test_an_operation_given_a_proxy_of_the_mapper_runs_with_its_services(
    mapper: em.Mapper,
) -> None:
    # Flask's current_mapper is a werkzeug LocalProxy: a static isinstance check on
    # Python >= 3.12 does not see its ``services``; the attribute lookup does
    proxy: Any = LocalProxy(lambda: mapper)  # typed as contrib.flask.current_mapper is
    assert context_of(proxy) is mapper.services
    assert context_of(mapper) is mapper.services
    assert context_of(mapper.services) is mapper.services
    with pytest.raises(IndexConfigurationError, match="is not a time-series model"):
        reindex_partitions(proxy, Note)  # switched to the services before its first use


def test_a_job_keeps_the_mapper_it_was_given_for_subclasses(mapper: em.Mapper) -> None:
    job = em.MaintainIndexesJob(mapper)
    assert job.mapper is mapper
    assert job.services is mapper.services
    result = _CountModels(mapper).run()
    assert result.error is None
    assert result.message == f"{len(mapper.models)} models"
