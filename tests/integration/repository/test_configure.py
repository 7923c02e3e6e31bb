"""configure_indexes: create, idempotence, new fields in place, changes that need a reindex."""

from __future__ import annotations

import logging

import pytest

import esmapper as em


def make(version: int = 1, **fields: object) -> type[em.Document]:
    namespace: dict[str, object] = {
        "Index": type("Index", (), {"name": "things", "version": version}),
        "__annotations__": {name: type(value) for name, value in fields.items()},
        **fields,
    }
    return type("Thing", (em.Document,), namespace)


def test_creates_versioned_index_behind_alias_and_is_idempotent(
    es_url: str, index_prefix: str, es_client: object
) -> None:
    Thing = make(name="")
    with em.Mapper(es_url, models=[Thing], index_prefix=index_prefix) as mapper:
        first = mapper.configure_indexes()
        assert [(s.action, s.current_index) for s in first] == [
            ("created", f"{index_prefix}things-v1")
        ]
        second = mapper.configure_indexes(force=True)  # past the marker of the first
        assert second[0].action == "unchanged"  # nothing sent when the mapping is there
        assert [s.action for s in mapper.configure_indexes()] == ["skipped"]  # marked done
        aliases = mapper.client.indices.get_alias(name=f"{index_prefix}things").body
        assert list(aliases) == [f"{index_prefix}things-v1"]
        mapping = mapper.client.indices.get_mapping(index=f"{index_prefix}things-v1").body
        props = mapping[f"{index_prefix}things-v1"]["mappings"]["properties"]
        assert props["name"] == {"type": "keyword"}


def test_new_fields_are_added_in_place(es_url: str, index_prefix: str) -> None:
    with em.Mapper(es_url, models=[make(name="")], index_prefix=index_prefix) as mapper:
        mapper.configure_indexes()
    Grown = make(name="", age=0)
    with em.Mapper(es_url, models=[Grown], index_prefix=index_prefix) as mapper:
        assert mapper.configure_indexes()[0].action == "mapping_updated"
        repo = mapper.repository(Grown)
        repo.add(Grown(age=3), consistency="wait")  # type: ignore[call-arg, call-overload]
        assert repo.count("age:3") == 1


def test_an_incompatible_change_asks_for_a_version_bump(es_url: str, index_prefix: str) -> None:
    with em.Mapper(es_url, models=[make(code="")], index_prefix=index_prefix) as mapper:
        mapper.configure_indexes()
    Changed = make(code=0)  # keyword -> long cannot be applied in place
    with (
        em.Mapper(es_url, models=[Changed], index_prefix=index_prefix) as mapper,
        pytest.raises(em.IndexConfigurationError, match=r"bump Thing\.Index\.version to 2"),
    ):
        mapper.configure_indexes()


def test_a_version_bump_is_reported_as_outdated(es_url: str, index_prefix: str) -> None:
    with em.Mapper(es_url, models=[make(name="")], index_prefix=index_prefix) as mapper:
        mapper.configure_indexes()
    with em.Mapper(es_url, models=[make(2, name="")], index_prefix=index_prefix) as mapper:
        state = mapper.configure_indexes()[0]
        assert state.action == "outdated"
        assert state.current_index == f"{index_prefix}things-v1"
        assert state.expected_index == f"{index_prefix}things-v2"


def test_two_models_on_one_alias_are_refused(es_url: str, index_prefix: str) -> None:
    with pytest.raises(em.IndexConfigurationError, match="both use index"):
        em.Mapper(es_url, models=[make(a=""), make(b="")], index_prefix=index_prefix)


def test_consistency_maps_to_refresh() -> None:
    from esmapper.options import refresh_param

    assert refresh_param("eventual") is None
    assert refresh_param("immediate") is True
    assert refresh_param("wait") == "wait_for"
    assert refresh_param("wait", by_query=True) is True
    with pytest.raises(ValueError, match="consistency"):
        em.Options(consistency="sometimes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown option"):
        em.Options().merge(consistancy="wait")


class EmployeeReview(em.Document):
    """No ``class Index:``: the documented default name (Document's docstring)."""

    text: str = ""


def test_a_model_without_class_index_is_named_after_its_class(
    es_url: str, index_prefix: str
) -> None:
    assert "``employee_review``" in (em.Document.__doc__ or "")  # what the reference says
    with em.Mapper(es_url, models=[EmployeeReview], index_prefix=index_prefix) as mapper:
        [step] = mapper.configure_indexes()
        assert (step.action, step.current_index) == (
            "created",
            f"{index_prefix}employee_review-v1",
        )
        aliases = mapper.client.indices.get_alias(name=f"{index_prefix}employee_review").body
        assert list(aliases) == [f"{index_prefix}employee_review-v1"]
        stored = mapper.repository(EmployeeReview).add(
            EmployeeReview(text="fine"), consistency="immediate"
        )
        assert mapper.client.get(index=f"{index_prefix}employee_review", id=stored.id)["found"]


def test_a_refused_mapping_change_is_logged_as_the_reference_does(
    es_url: str, index_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    with em.Mapper(es_url, models=[make(code="")], index_prefix=index_prefix) as mapper:
        mapper.configure_indexes()
    Changed = make(code=0)
    with (
        em.Mapper(es_url, models=[Changed], index_prefix=index_prefix) as mapper,
        caplog.at_level(logging.ERROR, logger="esmapper.indexes"),
        pytest.raises(em.IndexConfigurationError),
    ):
        assert mapper.spec(Changed).kind == "versioned"
        mapper.configure_indexes()
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        f"error updating index ({index_prefix}things-v1) mappings. Changing existing fields "
        "requires a new index version."
    ]


def _analysed(*analyzers: str) -> type[em.Document]:
    analysis = {"analyzer": {a: {"type": "custom", "tokenizer": "standard"} for a in analyzers}}
    index = type("Index", (), {"name": "things", "version": 1, "settings": {"analysis": analysis}})
    return type(
        "Thing", (em.Document,), {"Index": index, "__annotations__": {"name": str}, "name": ""}
    )


def test_a_new_analysis_component_is_warned_about_and_not_applied_by_closing_the_index(
    es_url: str, index_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    with em.Mapper(es_url, models=[_analysed("first")], index_prefix=index_prefix) as mapper:
        mapper.configure_indexes()
    index = f"{index_prefix}things-v1"
    Grown = _analysed("first", "second")
    with (
        em.Mapper(es_url, models=[Grown], index_prefix=index_prefix) as mapper,
        caplog.at_level(logging.WARNING, logger="esmapper.indexes"),
    ):
        assert mapper.configure_indexes()[0].action == "unchanged"
        settings = mapper.client.indices.get_settings(index=index).body[index]["settings"]
    assert sorted(settings["index"]["analysis"]["analyzer"]) == ["first"]
    warned = [r.getMessage() for r in caplog.records if "close/reopen" in r.getMessage()]
    assert warned == [
        f"adding new analyzer second to existing index {index} requires close/reopen, which "
        "esmapper does not do to an index that serves: bump Thing.Index.version and reindex"
    ]
