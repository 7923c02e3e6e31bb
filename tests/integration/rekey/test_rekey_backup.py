"""What ``rekey --apply`` needs first (a backup it can be rolled back with) and the
per-type audit of ``esmapper ids audit`` without a model."""

from __future__ import annotations

import datetime as dt
from typing import Any

import click
import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch import Elasticsearch, NotFoundError
from elasticsearch._sync.client.snapshot import SnapshotClient

import esmapper as em
from esmapper._rekey_audit import audit_types
from esmapper._rekey_backup import model_indexes, recent_snapshot
from esmapper.cli import _require_snapshot
from tests.integration.conftest import MakeMapper
from tests.integration.jobs.conftest import repository

from .test_rekey import Inbox, Unkeyed, msg, put

__all__ = ["repository"]


class Routed(em.Document):
    class Index:
        name = "routed"
        id_fields = ("customer", "number")
        routing_field = "customer"

    customer: str = ""
    number: str = ""


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Inbox, Unkeyed, Routed, configure=True)


def snapshot(es: Elasticsearch, repository: str, name: str, indices: str) -> None:
    es.snapshot.create(
        repository=repository, snapshot=name, indices=indices, wait_for_completion=True
    )


def test_a_recent_snapshot_of_the_model_s_indexes_is_found(
    mapper: em.Mapper, es_client: Elasticsearch, repository: str, index_prefix: str
) -> None:
    assert recent_snapshot(mapper, Inbox, repository) is None  # none taken yet
    snapshot(es_client, repository, "other", f"{index_prefix}unkeyed*")  # not the inbox
    assert recent_snapshot(mapper, Inbox, repository) is None
    snapshot(es_client, repository, "inbox", ",".join(model_indexes(mapper, Inbox)))
    found = recent_snapshot(mapper, Inbox, repository)
    assert found is not None and found.name == "inbox" and found.successful
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2)  # too old by then
    assert recent_snapshot(mapper, Inbox, repository, now=later) is None
    assert recent_snapshot(mapper, Inbox, repository, now=later, max_age=dt.timedelta(days=3))


def test_apply_is_refused_without_a_snapshot_and_accepted_with_one(
    mapper: em.Mapper,
    es_client: Elasticsearch,
    repository: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    day = dt.timedelta(hours=24)
    with pytest.raises(click.ClickException, match="take a snapshot first"):
        _require_snapshot(mapper, Inbox, None, day)
    with pytest.raises(click.ClickException, match=r"no successful snapshot in .* ended within"):
        _require_snapshot(mapper, Inbox, repository, day)
    with pytest.raises(click.ClickException, match="'no-such' does not exist"):
        _require_snapshot(mapper, Inbox, "no-such", day)
    snapshot(es_client, repository, "before-rekey", ",".join(model_indexes(mapper, Inbox)))
    _require_snapshot(mapper, Inbox, repository, day)
    assert f"backup: {repository}/before-rekey (SUCCESS" in capsys.readouterr().out


def test_a_snapshot_whose_metadata_is_unreadable_does_not_fail_the_listing(
    mapper: em.Mapper,
    es_client: Elasticsearch,
    repository: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snapshot(es_client, repository, "inbox", ",".join(model_indexes(mapper, Inbox)))
    listing = SnapshotClient.get

    def as_a_cluster(self: SnapshotClient, **kwargs: Any) -> Any:
        # a real cluster answers the whole listing 404 snapshot_missing_exception when one
        # snapshot of the repository cannot be read, unless ignore_unavailable
        if not kwargs.get("ignore_unavailable"):
            meta = ApiResponseMeta(404, "1.1", HttpHeaders(), 0.0, NodeConfig("http", "h", 9200))
            body = {"error": {"type": "snapshot_missing_exception"}, "status": 404}
            raise NotFoundError("snapshot_missing_exception", meta, body)
        return listing(self, **kwargs)

    with monkeypatch.context() as patched:  # undone before the repository's teardown lists
        patched.setattr(SnapshotClient, "get", as_a_cluster)
        found = recent_snapshot(mapper, Inbox, repository)
    assert found is not None and found.name == "inbox"


def test_the_per_type_audit_says_which_models_are_affected(
    mapper: em.Mapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    inbox = mapper.spec(Inbox).physical_name()
    put(es_client, inbox, "acme_42_Handler", **msg("acme", "42", "Handler"))  # legacy id
    put(es_client, inbox, "acme:43:Handler", **msg("acme", "43", "Handler"))
    lines = [t.line for t in audit_types(mapper, mapper.models)]
    assert lines == [
        f"Inbox  index={index_prefix}inbox  id parts=3 -> AFFECTED (1 to rewrite, 0 blocked, 1 ok)",
        f"Unkeyed  index={index_prefix}unkeyed  id parts=0 -> not affected "
        "(generated ids: nothing to re-key)",
        f"Routed  index={index_prefix}routed  id parts=1 -> not affected "
        "(0 to rewrite, 0 blocked, 0 ok)",
    ]
