"""The date rule on every write path (esmapper._dates): the updated date set to now, a
missing, pre-1971 or future created date corrected, for ``em.HasDates`` models and for
models that name their date attributes with ``class Index: dates``."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from elasticsearch import Elasticsearch
from elasticsearch.dsl.query import Ids

import esmapper as em
from esmapper.patches import Patch
from tests.integration.conftest import FakeClock, MakeMapper

from .models import Employee

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)
NOW_TEXT = "2026-06-01T12:00:00Z"
VALID = "2020-01-01T00:00:00Z"


class Stamped(em.Document):
    """Dates under other names, declared once."""

    class Index:
        name = "stamped"
        dates = ("created_at", "modified_at")
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    n: int = 0
    created_at: dt.datetime | None = None
    modified_at: dt.datetime | None = None


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
def dated(make_mapper: MakeMapper, clock: FakeClock) -> em.Mapper:
    return make_mapper(Employee, Stamped, configure=True, clock=clock)


def _raw(es: Elasticsearch, repo: em.Repository[Any], id: str, **source: Any) -> None:
    es.index(index=repo.spec.alias, id=id, document={"id": id, **source}, refresh=True)


def _stored(es: Elasticsearch, repo: em.Repository[Any], id: str) -> dict[str, Any]:
    return dict(es.get(index=repo.spec.alias, id=id)["_source"])


CREATED = {
    "missing": None,
    "before 1971": "1960-01-01T00:00:00Z",
    "in the future": "2999-01-01T00:00:00Z",
}


def _patches() -> dict[str, Patch]:
    return {
        "json": em.JsonPatch([{"op": "replace", "path": "n", "value": 5}]),
        "action": em.ActionPatch(lambda d: setattr(d, "n", 5)),
    }


@pytest.mark.parametrize("kind", ["json", "action"])
@pytest.mark.parametrize("case", list(CREATED))
def test_client_side_patches_by_id_correct_the_created_date(
    dated: em.Mapper, es_client: Elasticsearch, kind: str, case: str
) -> None:
    repo = dated.repository(Stamped)
    stored = {"n": 1} if CREATED[case] is None else {"n": 1, "created_at": CREATED[case]}
    _raw(es_client, repo, "s1", **stored)
    repo.patch("s1", _patches()[kind])
    source = _stored(es_client, repo, "s1")
    assert source["n"] == 5
    assert source["created_at"] == NOW_TEXT
    assert source["modified_at"] == NOW_TEXT
    assert "created_utc" not in source and "updated_utc" not in source


@pytest.mark.parametrize("kind", ["json", "action", "partial", "script"])
def test_patch_all_corrects_a_bad_created_date_and_keeps_a_good_one(
    dated: em.Mapper, es_client: Elasticsearch, kind: str
) -> None:
    repo = dated.repository(Stamped)
    _raw(es_client, repo, "bad", n=1, created_at=CREATED["in the future"])
    _raw(es_client, repo, "none", n=1)
    _raw(es_client, repo, "good", n=1, created_at=VALID)
    patches: dict[str, Patch] = {
        "json": em.JsonPatch([{"op": "replace", "path": "n", "value": 5}]),
        "action": em.ActionPatch(lambda d: setattr(d, "n", 5)),
        "partial": em.PartialPatch({"n": 5}),
        "script": em.ScriptPatch("ctx._source.n = 5"),
    }
    assert repo.patch_all(None, patches[kind], consistency="wait") == 3
    good, none = _stored(es_client, repo, "good"), _stored(es_client, repo, "none")
    assert good["created_at"] == VALID and none["created_at"] == NOW_TEXT
    assert good["modified_at"] == none["modified_at"] == NOW_TEXT
    assert good["n"] == none["n"] == 5
    bad = _stored(es_client, repo, "bad")["created_at"]
    # a script (here one _update_by_query) corrects a missing date only: Painless cannot
    # compare stored date strings portably (esmapper._dates)
    assert bad == (CREATED["in the future"] if kind == "script" else NOW_TEXT)


def test_a_script_patch_by_id_sets_the_dates_in_the_same_request(
    dated: em.Mapper, es_client: Elasticsearch
) -> None:
    repo = dated.repository(Stamped)
    _raw(es_client, repo, "s1", n=1)
    _raw(es_client, repo, "s2", n=1, created_at=VALID)
    repo.patch(["s1", "s2"], em.ScriptPatch("ctx._source.n += 1"))
    one, two = _stored(es_client, repo, "s1"), _stored(es_client, repo, "s2")
    assert (one["n"], one["created_at"], one["modified_at"]) == (2, NOW_TEXT, NOW_TEXT)
    assert (two["n"], two["created_at"], two["modified_at"]) == (2, VALID, NOW_TEXT)


def test_a_script_ending_in_a_comment_or_a_block_gets_its_dates(
    dated: em.Mapper, es_client: Elasticsearch
) -> None:
    """The dates follow the caller's script in one script that compiles: before, a ``;``
    was appended to the script's last line (inside a trailing ``//`` comment, and ``};``
    after a block, which Painless refuses)."""
    repo = dated.repository(Stamped)
    for id in ("s1", "s2", "s3"):
        _raw(es_client, repo, id, n=1)
    repo.patch("s1", em.ScriptPatch("ctx._source.n += 1 // one more"))
    repo.patch(["s2", "s3"], em.ScriptPatch("if (ctx._source.n > 0) { ctx._source.n += 1 }"))
    repo.patch_all(Ids(values=["s1"]), em.ScriptPatch("ctx._source.n += 10 // by query"))
    for id, n in (("s1", 12), ("s2", 2), ("s3", 2)):
        stored = _stored(es_client, repo, id)
        assert (stored["n"], stored["created_at"], stored["modified_at"]) == (n, NOW_TEXT, NOW_TEXT)


def test_a_noop_script_writes_no_date(dated: em.Mapper, es_client: Elasticsearch) -> None:
    repo = dated.repository(Stamped)
    _raw(es_client, repo, "s1", n=1)
    repo.patch("s1", em.ScriptPatch("ctx.op = 'none'"))
    assert _stored(es_client, repo, "s1") == {"id": "s1", "n": 1}


def test_the_callers_updated_date_wins_for_partial_and_script_patches(
    dated: em.Mapper, es_client: Elasticsearch
) -> None:
    repo = dated.repository(Stamped)
    _raw(es_client, repo, "s1", n=1, created_at=VALID)
    mine = dt.datetime(2025, 1, 2, tzinfo=dt.timezone.utc)
    repo.patch("s1", em.PartialPatch({"modified_at": mine}))
    assert _stored(es_client, repo, "s1")["modified_at"].startswith("2025-01-02")
    repo.patch(
        "s1",
        em.ScriptPatch(
            "ctx._source.modified_at = params.modified_at", {"modified_at": "2024-03-04T00:00:00Z"}
        ),
    )
    assert _stored(es_client, repo, "s1")["modified_at"] == "2024-03-04T00:00:00Z"


def test_json_and_action_patches_always_overwrite_the_updated_date(
    dated: em.Mapper, es_client: Elasticsearch
) -> None:
    repo = dated.repository(Stamped)
    _raw(es_client, repo, "s1", n=1, created_at=VALID)
    repo.patch("s1", em.JsonPatch([{"op": "add", "path": "modified_at", "value": VALID}]))
    assert _stored(es_client, repo, "s1")["modified_at"] == NOW_TEXT


def test_add_and_save_use_the_declared_names(dated: em.Mapper, clock: FakeClock) -> None:
    repo = dated.repository(Stamped)
    doc = repo.add(Stamped(n=1, created_at=dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc)))
    assert doc.created_at == doc.modified_at == NOW
    clock.now = NOW + dt.timedelta(hours=1)
    doc.n = 2
    repo.save(doc)
    assert (doc.created_at, doc.modified_at) == (NOW, clock.now)


def test_has_dates_models_keep_their_names(dated: em.Mapper, es_client: Elasticsearch) -> None:
    repo = dated.repository(Employee)
    _raw(es_client, repo, "e1", age=1, is_deleted=False)
    repo.patch("e1", em.ActionPatch(lambda d: setattr(d, "age", 2)))
    source = _stored(es_client, repo, "e1")
    assert source["created_utc"] == source["updated_utc"] == NOW_TEXT


def test_a_partial_patch_by_id_sets_the_updated_date_only(
    dated: em.Mapper, es_client: Elasticsearch
) -> None:
    """One unconditioned Update API merge: it reads nothing, so it cannot judge the stored
    created date (the other paths correct it)."""
    repo = dated.repository(Stamped)
    _raw(es_client, repo, "s1", n=1)
    repo.patch("s1", em.PartialPatch({"n": 2}))
    assert _stored(es_client, repo, "s1") == {"id": "s1", "n": 2, "modified_at": NOW_TEXT}


@pytest.mark.parametrize(
    ("dates", "message"),
    [
        (("created", "modified_at"), "the created date 'created' is not an attribute"),
        (("n", None), "the created date 'n' is not a datetime attribute"),
        (("modified_at", "modified_at"), "as both the created and the updated date"),
        ("created_at", "names the (created, updated) datetime attributes"),
    ],
)
def test_bad_date_declarations_are_refused(dates: Any, message: str) -> None:
    with pytest.raises(em.IndexConfigurationError, match=re.escape(message)):

        class Bad(em.Document):
            Index = type("Index", (), {"name": "bad", "dates": dates})

            n: int = 0
            created_at: dt.datetime | None = None
            modified_at: dt.datetime | None = None

        assert Bad.__esmapper__ is not None


def test_dates_off_for_a_has_dates_model() -> None:
    class Undated(em.Document, em.HasDates):
        class Index:
            name = "undated"
            dates = ()

    info = Undated.__esmapper__
    assert (info.has_dates, info.created_field, info.updated_field) == (False, None, None)


def test_a_time_series_is_partitioned_by_the_declared_created_date(
    make_mapper: MakeMapper,
) -> None:
    class Opened(em.Document):
        class Index:
            name = "opened"
            kind = "daily"
            dates = ("opened_at", None)

        opened_at: dt.datetime | None = None

    mapper = make_mapper(Opened)
    assert mapper.services.spec(Opened).date_field == "opened_at"
    with pytest.raises(em.IndexConfigurationError, match="default date field"):

        class Undated(em.Document):
            class Index:
                name = "undated_series"
                kind = "daily"
                dates = (None, "opened_at")

            opened_at: dt.datetime | None = None

        assert Undated.__esmapper__ is not None
