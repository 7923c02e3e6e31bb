"""The by-query writes take what they need, not the Repository: a
:class:`~esmapper._scan.Listing` (context, model, spec, scope) searches their matches,
and the custom-field definitions repositories are the feature's state in the context
(``ctx.extension``), reached without the Context naming the feature."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch.dsl import Q

import esmapper as em
from esmapper import _by_query
from esmapper._scan import Listing, scan
from esmapper._services import Services
from esmapper.custom_fields._access import definitions
from esmapper.options import Options
from tests.integration.conftest import MakeMapper


class Note(em.Document, em.Versioned):
    class Index:
        name = "listing_notes"

    text: str = em.field(em.Keyword(), default="")
    group: str = em.field(em.Keyword(), default="")


class Person(em.Document, em.HasCustomFields):
    class Index:
        name = "listing_people"
        tenant_field = "company"

    company: str = em.field(em.Keyword(), default="")


def _stored(make_mapper: MakeMapper) -> tuple[em.Mapper, Listing]:
    mapper = make_mapper(Note)
    repo: em.Repository[Any] = mapper.repository(Note)
    groups = {"a": "x", "b": "x", "c": "y", "d": "y"}
    repo.add([Note(id=i, text=i, group=g) for i, g in groups.items()], consistency="immediate")
    return mapper, Listing(mapper.services, Note.__esmapper__, mapper.spec(Note))  # type: ignore[attr-defined]


def test_a_listing_s_scope_restricts_every_search_of_a_scan(make_mapper: MakeMapper) -> None:
    _mapper, listing = _stored(make_mapper)
    scoped = Listing(listing.ctx, listing.info, listing.spec, Q("term", group="x"))
    pages: list[list[str]] = []

    def page(results: Any) -> None:
        pages.append([h.id for h in results.hits])

    delivered = scan(scoped, None, page, Options(), limit=1)
    assert delivered == 2
    assert sorted(i for page in pages for i in page) == ["a", "b"]
    # the scope and the filter both hold
    assert [h.id for h in scoped.request("text:b OR text:c", Options(), {}).find().hits] == ["b"]


@pytest.mark.parametrize("cache", [False, True])  # _delete_by_query, or the scan's deletes
def test_remove_all_takes_a_listing_and_removes_only_its_scope(
    make_mapper: MakeMapper, cache: bool
) -> None:
    mapper, listing = _stored(make_mapper)
    scoped = Listing(listing.ctx, listing.info, listing.spec, Q("term", group="y"))
    options = Options(consistency="immediate", cache=cache or None)
    assert _by_query.remove_all(scoped, None, options) == 2
    left = mapper.repository(Note).find(sort="id", consistency="immediate")
    assert [d.id for d in left] == ["a", "b"]


def test_patch_all_takes_a_listing(make_mapper: MakeMapper) -> None:
    mapper, listing = _stored(make_mapper)
    patched = _by_query.patch_all(
        listing, "group:x", em.PartialPatch({"text": "p"}), Options(consistency="immediate")
    )
    assert patched == 2
    found = mapper.repository(Note).find("text:p", sort="id", consistency="immediate")
    assert [d.id for d in found] == ["a", "b"]


def test_the_definitions_repository_is_the_feature_s_state_in_the_context(
    make_mapper: MakeMapper,
) -> None:
    mapper = make_mapper(Person)
    repo = mapper.custom_fields(Person)
    assert repo is mapper.custom_fields(Person) is definitions(mapper.services, Person)
    kept: Any = mapper.services.extension("custom_fields", dict)  # the feature made it: no dict
    assert not isinstance(kept, dict)
    assert kept.of(mapper.services, Person) is repo
    assert repo.mapper is mapper
    assert not hasattr(Services, "custom_fields")  # the core names no feature


def test_definitions_of_a_model_without_custom_fields_is_a_type_error(
    make_mapper: MakeMapper,
) -> None:
    mapper = make_mapper(Note)
    with pytest.raises(TypeError, match="Note has no custom fields"):
        mapper.custom_fields(Note)
