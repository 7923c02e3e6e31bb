"""Keyword checks of repository and session calls: done from the signature, before the call
runs (so before anything is sent; the mapper here points at a port nothing listens on)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import esmapper as em
from esmapper.options import OPTION_NAMES


class Note(em.Document):
    title: str = em.field(em.Keyword(), default="")


@pytest.fixture
def mapper() -> Iterator[em.Mapper]:
    with em.Mapper("http://127.0.0.1:1", models=[Note], index_prefix="kw-") as mapper:
        yield mapper


def test_a_misspelt_option_names_itself_and_every_keyword_of_the_call(mapper: em.Mapper) -> None:
    with pytest.raises(TypeError) as raised:
        mapper.repository(Note).get("n1", consistancy="wait")  # type: ignore[call-arg]
    message = str(raised.value)
    assert message.startswith("get() got unknown keyword(s): consistancy; it takes id;")
    assert all(name in message for name in OPTION_NAMES)


def test_session_reads_check_their_keywords(mapper: em.Mapper) -> None:
    with mapper.session() as session:
        with pytest.raises(TypeError, match=r"find\(\) got unknown keyword\(s\): limt, sortt;"):
            session.find(Note, limt=3, sortt="title")  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"find_one\(\) got unknown keyword\(s\): limit;"):
            session.find_one(Note, limit=3)  # type: ignore[call-arg]


def test_a_search_keyword_the_call_does_not_take_is_refused(mapper: em.Mapper) -> None:
    repo = mapper.repository(Note)
    with pytest.raises(TypeError, match=r"count\(\) got unknown keyword\(s\): sort;"):
        repo.count(sort="title")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"batch_process\(\) got unknown keyword\(s\): limit;"):
        repo.batch_process(None, lambda docs: None, limit=5)  # type: ignore[call-arg]


def test_bad_option_values_are_refused_before_sending(mapper: em.Mapper) -> None:
    repo = mapper.repository(Note)
    with pytest.raises(ValueError, match="consistency='soon' is not one of"):
        repo.add(Note(), consistency="soon")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="soft_deletes='gone' is not one of"):
        repo.get("n1", soft_deletes="gone")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout=-1 must be a positive"):
        repo.get("n1", timeout=-1)


def test_sessions_check_their_options(mapper: em.Mapper) -> None:
    with pytest.raises(TypeError, match=r"^session\(\) got unknown keyword\(s\): consistancy;"):
        mapper.session(consistancy="wait")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^Session\(\) got unknown keyword\(s\): soft_delete;"):
        em.Session(mapper, soft_delete="all")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^sessionmaker\(\) got unknown keyword\(s\): cach;"):
        mapper.sessionmaker(cach=False)  # type: ignore[call-arg]
    factory = mapper.sessionmaker(consistency="wait")
    with factory(soft_deletes="all") as session:
        assert (session.options.consistency, session.options.soft_deletes) == ("wait", "all")


class Staff(em.Document, em.HasCustomFields):
    class Index:
        tenant_field = "company_id"

    company_id: str = em.field(em.Keyword(), default="")


def test_the_custom_field_repository_checks_its_keywords() -> None:
    with em.Mapper("http://127.0.0.1:1", models=[Staff], index_prefix="kw-") as mapper:
        fields = mapper.custom_fields(Staff)
        definition = em.CustomFieldDefinition(tenant_key="acme", name="Level", index_type="int")
        with pytest.raises(TypeError) as raised:
            fields.add(definition, consistancy="wait")  # type: ignore[call-overload]
        message = str(raised.value)
        assert message.startswith("add() got unknown keyword(s): consistancy; it takes docs;")
        assert all(name in message for name in OPTION_NAMES)
        with pytest.raises(TypeError, match=r"^save\(\) got unknown keyword\(s\): soft_delete;"):
            fields.save([definition], soft_delete="all")  # type: ignore[call-overload]
        with pytest.raises(TypeError, match=r"^remove_all\(\) got unknown keyword\(s\): limit;"):
            fields.remove_all(None, limit=5)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"^patch_all\(\) got unknown keyword\(s\): cach;"):
            fields.patch_all(None, em.PartialPatch({}), cach=False)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"^add_field\(\) got unknown keyword\(s\): valdate;"):
            fields.add_field("acme", "Level", "int", valdate=False)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"^find_by_tenant\(\) got unknown keyword\(s\): lmit;"):
            fields.find_by_tenant("acme", lmit=5)  # type: ignore[call-arg]


def test_the_option_typed_dicts_name_every_option() -> None:
    from esmapper._keywords import OptionKeywords, UntenantedOptionKeywords

    assert set(OptionKeywords.__optional_keys__) == set(OPTION_NAMES)
    assert set(UntenantedOptionKeywords.__optional_keys__) == set(OPTION_NAMES) - {"tenant"}


def test_each_call_takes_its_own_keywords_and_every_option() -> None:
    """The keywords of each call come from one ``TypedDict`` of ``esmapper._keywords`` (its
    ``**options: Unpack[...]``) and its named parameters: the sets the calls listed one by
    one before."""
    import inspect

    from esmapper._search import SEARCH_OPTIONS
    from esmapper.options import keywords_taken

    search = set(SEARCH_OPTIONS)
    one = search - {"limit", "total"}
    shards = {"partitions", "partial_results"}
    scan = {"sort", "search_after", "includes", "excludes", "snapshot", "partitions"}
    repo, session = em.Repository, em.Session
    own: dict[Callable[..., Any], set[str]] = {
        repo.search: {"filter", *search},
        repo.find: {"filter", *search},
        repo.find_as: {"result_type", "filter", *search},
        repo.find_one: {"filter", *one},
        repo.count: {"filter", *shards},
        repo.aggregate: {"filter", "aggregations", *shards},
        repo.exists: {"id", "filter", *shards},
        repo.batch_process: {"filter", "fn", "batch_size", *scan},
        repo.get: {"id"},
        repo.require: {"id"},
        repo.get_many: {"ids"},
        repo.add: {"docs"},
        repo.save: {"docs"},
        repo.remove: {"docs"},
        repo.patch: {"ids", "patch"},
        repo.patch_all: {"filter", "patch"},
        repo.remove_all: {"filter"},
        session.get: {"model", "id"},
        session.get_many: {"model", "ids"},
        session.find: {"model", "filter", *search},
        session.find_one: {"model", "filter", *one},
        session.__init__: {"mapper"},
        em.sessionmaker.__init__: {"mapper"},
        em.Mapper.session: set(),
        em.Mapper.sessionmaker: set(),
    }
    for method, keywords in own.items():
        taken = keywords_taken(inspect.unwrap(method))
        assert taken == keywords | set(OPTION_NAMES), method.__qualname__


def test_a_keyword_given_none_is_the_default(mapper: em.Mapper) -> None:
    session = em.Session(mapper, consistency=None, soft_deletes="all", tenant=None)
    assert (session.options.consistency, session.options.soft_deletes) == ("eventual", "all")
    assert mapper.sessionmaker(cache=None, validate=False).options == {"validate": False}
