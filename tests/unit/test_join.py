"""Parent/child joins without a server (:mod:`esmapper._join`, ``em.Id``): the options'
checks, the shared mapping, what the points give (routing, the join value, the search
clauses), the query builders, and the request shapes of the searches checked against the
Elasticsearch API specification."""

from __future__ import annotations

import datetime as dt
import pickle
from pathlib import Path
from typing import Any

import pytest
from elasticsearch.dsl import Q

import esmapper as em
from esmapper._features import WriteCall
from esmapper._join import ChildJoin, ParentJoin, join_of
from esmapper._pending import PatchForm, PendingWrite
from esmapper.bulk import BulkAction
from esmapper.errors import DocumentValidationError, IndexConfigurationError
from esmapper.indexes._lookup import mget_ids, read_params, sent_params, unrouted
from esmapper.indexes.spec import IndexSpec
from esmapper.options import Options
from esmapper.query.filter import compile_filter
from esmapper.testing._spec_check import load_checker

KIT = Path(__file__).resolve().parents[2] / "tools" / "es_spec"


class Shop(em.Document, em.SoftDeletes):
    class Index:
        name = "unit-shops"
        join_field = "relation"

    name: str = em.field(em.Keyword(), default="")


class Clerk(em.Document):
    class Index:
        name = "unit-shops"
        parent = Shop
        parent_field = "shop_id"

    shop_id: str | None = em.field(em.Keyword(), default=None)
    email: str = em.field(em.Keyword(), default="")


class ShopItem(em.Document, em.SoftDeletes):
    class Index:
        name = "unit-shops"
        parent = Shop
        parent_field = "shop_id"

    shop_id: str | None = em.field(em.Keyword(), default=None)
    price: int = em.field(em.Integer(), default=0)


def _parent() -> ParentJoin:
    join = join_of(Shop)
    assert isinstance(join, ParentJoin)
    return join


def _child(model: type = Clerk) -> ChildJoin:
    join = join_of(model)
    assert isinstance(join, ChildJoin)
    return join


class _Ctx:
    """What the search point reads of a context: the document cache's recently-deleted
    list (``deleted``: the ids it holds per alias; ``None``: no cache)."""

    def __init__(self, deleted: dict[str, list[str]] | None = None) -> None:
        self.deleted = deleted
        self.documents = None if deleted is None else self

    def documents_of(self, info: Any) -> Any:
        return self.documents

    def recently_deleted(self, alias: str) -> list[str]:
        assert self.deleted is not None
        return self.deleted.get(alias, [])

    def spec(self, model: type) -> Any:
        return type("Spec", (), {"alias": model.__esmapper__.index.name})  # type: ignore[attr-defined]


NO_CACHE: Any = _Ctx()


def _call() -> WriteCall:
    return WriteCall(None, Options(), None)  # type: ignore[arg-type]


# -- Id ----------------------------------------------------------------------------------


def test_an_id_is_its_value_and_carries_its_routing() -> None:
    id = em.Id("e1", routing="s1")
    assert id == "e1" and hash(id) == hash("e1") and {str(id): 1}[id] == 1
    assert id.routing == "s1" and id.value == "e1" and type(id.value) is str
    assert repr(id) == "Id('e1', routing='s1')" and repr(em.Id("e1")) == "Id('e1')"
    again = pickle.loads(pickle.dumps(id))
    assert again == "e1" and again.routing == "s1"
    assert em.check_id(id) is id


@pytest.mark.parametrize(
    ("value", "routing", "error"),
    [(1, None, TypeError), ("e1", 2, TypeError), ("e1", "", ValueError)],
)
def test_a_bad_id_is_refused(value: Any, routing: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="Id"):
        em.Id(value, routing=routing)


# -- options -----------------------------------------------------------------------------


def test_both_models_map_the_whole_index() -> None:
    mapping = Shop.__esmapper__.mapping
    assert Clerk.__esmapper__.mapping == mapping == ShopItem.__esmapper__.mapping
    assert mapping["properties"]["relation"] == {
        "type": "join",
        "relations": {"shop": ["clerk", "shop_item"]},
    }
    assert {"name", "shop_id", "email", "price", "is_deleted"} <= set(mapping["properties"])
    assert Shop.__esmapper__.properties.keys() == {"id", "name", "is_deleted"}  # its own


class Tenantry(em.Document, em.HasCustomFields):
    class Index:
        name = "unit-tenantries"
        join_field = "relation"
        tenant_field = "tenant"

    tenant: str = em.field(em.Keyword(), default="")


class Lodger(em.Document):
    class Index:
        name = "unit-tenantries"
        parent = Tenantry
        parent_field = "tenantry_id"

    tenantry_id: str | None = em.field(em.Keyword(), default=None)


def test_what_other_features_add_to_the_mapping_is_the_whole_index() -> None:
    # the parent's custom fields: idx a dynamic object and the dynamic templates of its
    # slots, in the child's mapping too (else the model creating the index decides)
    mapping = Tenantry.__esmapper__.mapping
    assert Lodger.__esmapper__.mapping == mapping
    assert mapping["properties"]["idx"]["dynamic"] is True and mapping["dynamic_templates"]
    assert {"tenant", "tenantry_id", "relation", "custom_fields"} <= set(mapping["properties"])


def test_a_child_has_dates_when_its_parent_has() -> None:
    # a version bump of a dated model catches up by updated_utc: a child without it,
    # written during the copy, would be left out of the new index
    with pytest.raises(IndexConfigurationError, match=r"same field .* got None and 'updated_utc'"):

        class Undated(em.Document):
            class Index:
                name = "unit-dated"
                parent = Dated
                parent_field = "dated_id"

            dated_id: str | None = em.field(em.Keyword(), default=None)


def test_a_child_dates_its_writes_in_its_parents_field() -> None:
    # renamed dates (Index.dates) must be the parent's too: the catch-up reads one field
    with pytest.raises(IndexConfigurationError, match=r"got 'changed_at' and 'updated_utc'"):

        class Renamed(em.Document):
            class Index:
                name = "unit-dated"
                parent = Dated
                parent_field = "dated_id"
                dates = ("made_at", "changed_at")

            dated_id: str | None = em.field(em.Keyword(), default=None)
            made_at: dt.datetime | None = None
            changed_at: dt.datetime | None = None


class Dated(em.Document, em.HasDates):
    class Index:
        name = "unit-dated"
        join_field = "relation"


def test_a_model_outside_a_join_has_no_join() -> None:
    class Loner(em.Document):
        class Index:
            name = "unit-loner"

    assert join_of(Loner) is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "unit-shops", "parent": int, "parent_field": "shop_id"}, r"parent must be"),
        ({"name": "unit-shops", "parent": Clerk, "parent_field": "shop_id"}, r"parent must be"),
        ({"name": "unit-shops", "parent": Shop, "parent_field": "nope"}, r"parent_field must"),
        ({"name": "unit-shops", "parent": Shop}, r"parent_field must"),
        ({"name": "unit-other", "parent": Shop, "parent_field": "shop_id"}, r"index of its parent"),
        (
            {"name": "unit-shops", "version": 2, "parent": Shop, "parent_field": "shop_id"},
            r"version 1",
        ),
        (
            {
                "name": "unit-shops",
                "settings": {"number_of_shards": 2},
                "parent": Shop,
                "parent_field": "shop_id",
            },
            r"Stray\.Index\.settings must be its parent's \(Shop\.Index\.settings = \{\}\)",
        ),
        (
            {"name": "unit-shops", "dynamic": "strict", "parent": Shop, "parent_field": "shop_id"},
            r"Stray\.Index\.dynamic must be",
        ),
    ],
)
def test_bad_child_options_are_refused(options: dict[str, Any], message: str) -> None:
    index = type("Index", (), options)
    with pytest.raises(IndexConfigurationError, match=message):
        type(
            "Stray",
            (em.Document,),
            {
                "Index": index,
                "__annotations__": {"shop_id": "str | None"},
                "shop_id": em.field(em.Keyword(), default=None),
            },
        )


def test_bad_parent_options_are_refused() -> None:
    with pytest.raises(IndexConfigurationError, match=r"join_field 'name' is a field of"):

        class Twice(em.Document):
            class Index:
                name = "unit-twice"
                join_field = "name"

            name: str = ""

    with pytest.raises(IndexConfigurationError, match=r"sets routing_field and join_field"):

        class Routed(em.Document):
            class Index:
                name = "unit-routed"
                id_fields = ("a",)
                routing_field = "a"
                join_field = "relation"

            a: str = ""

    with pytest.raises(IndexConfigurationError, match=r"needs one index"):

        class Daily(em.Document, em.HasDates):
            class Index:
                name = "unit-daily"
                kind = "daily"
                join_field = "relation"


def test_a_child_mapping_a_field_differently_is_refused() -> None:
    with pytest.raises(IndexConfigurationError, match=r"maps .*'name' as"):

        class Clash(em.Document):
            class Index:
                name = "unit-shops"
                parent = Shop
                parent_field = "shop_id"

            shop_id: str | None = em.field(em.Keyword(), default=None)
            name: int = 0


# -- writes ------------------------------------------------------------------------------


def _pending(kind: str, doc: Any = None, id: Any = None, **kw: Any) -> PendingWrite:
    return PendingWrite(kind, doc, Clerk.__esmapper__, id=id, **kw)  # type: ignore[arg-type]


def test_child_actions_are_routed_by_the_parent_id_and_carry_the_join_value() -> None:
    clerk = Clerk(id="c1", shop_id="s1", email="a@b")
    add = BulkAction(
        "create", "i", "c1", {"shop_id": "s1", "email": "a@b"}, ref=_pending("add", clerk)
    )
    by_id = BulkAction(
        "delete",
        "i",
        em.Id("c2", routing="s2"),
        ref=_pending("remove", id=em.Id("c2", routing="s2")),
    )
    scanned = BulkAction(
        "update", "i", "c3", {"doc": {"email": "x"}},
        ref=_pending("patch", id="c3", original_source={"shop_id": "s3"}),
    )  # fmt: skip
    _child().shape(None, [add, by_id, scanned])  # type: ignore[arg-type]
    assert [a.routing for a in (add, by_id, scanned)] == ["s1", "s2", "s3"]
    assert add.body == {
        "shop_id": "s1",
        "email": "a@b",
        "relation": {"name": "clerk", "parent": "s1"},
    }
    assert scanned.body == {"doc": {"email": "x"}}  # an update keeps the stored join
    assert _child().expected_source(None, add, {"shop_id": "s1"}) == {  # type: ignore[arg-type]
        "shop_id": "s1",
        "relation": {"name": "clerk", "parent": "s1"},
    }


def test_parent_actions_carry_their_relation_and_no_routing() -> None:
    shop = Shop(id="s1", name="x")
    action = BulkAction(
        "index", "i", "s1", {"name": "x"},
        ref=PendingWrite("save", shop, Shop.__esmapper__),  # type: ignore[arg-type]
    )  # fmt: skip
    _parent().shape(None, [action])  # type: ignore[arg-type]
    assert action.body == {"name": "x", "relation": "shop"} and action.routing is None


@pytest.mark.parametrize(
    ("pending", "message"),
    [
        (lambda: _pending("add", Clerk(email="a")), r"has no parent: set shop_id"),
        (lambda: _pending("save", Clerk(id="c1", email="a")), r"has no parent"),
        (lambda: _pending("remove", id="c1"), r"remove of Clerk 'c1' by id needs.*em\.Id\('c1'"),
        (lambda: _pending("patch", id="c1"), r"patch of Clerk 'c1' by id needs"),
        (
            lambda: _pending(
                "save", Clerk(id="c1", shop_id="s2"), original_source={"shop_id": "s1"}
            ),
            r"moves from shop_id 's1' to 's2'",
        ),
        (
            lambda: _pending("patch", form=_form(em.PartialPatch({"shop_id": "s9"}))),
            r"a patch of Clerk sets shop_id",
        ),
    ],
)
def test_bad_child_writes_are_refused(pending: Any, message: str) -> None:
    with pytest.raises(DocumentValidationError, match=message) as err:
        _child().check(_call(), [pending()])
    assert err.value.field == "shop_id"


def _form(patch: Any) -> PatchForm:
    return PatchForm(patch, True)


def test_good_child_writes_pass() -> None:
    _child().check(
        _call(),
        [
            _pending("add", Clerk(shop_id="s1")),
            _pending("save", Clerk(id="c1", shop_id="s1"), original_source={"shop_id": "s1"}),
            _pending("remove", id=em.Id("c1", routing="s1")),
            _pending("patch", id="c1", original_source={"shop_id": "s1"}),  # a scanned one
            _pending("patch", form=_form(em.PartialPatch({"email": "x"}))),  # judged early
        ],
    )


# -- reads and searches ------------------------------------------------------------------


def test_by_id_reads_route_with_the_ids_routing_or_say_it_is_unknown() -> None:
    assert _child().read_params(em.Id("c1", routing="s1")) == {"routing": "s1"}
    assert _child().read_params("c1") == {"routing": None}
    assert not Shop.__esmapper__.points.read_params  # a parent routes by its own id


def _relation(name: str) -> dict[str, Any]:
    # a cluster's join mapper indexes the relation in the join field itself (parent and
    # child); the local server indexes a child's {"name": ..., "parent": ...} literally
    should = [{"term": {"relation": name}}, {"term": {"relation.name": name}}]
    return {"bool": {"should": should, "minimum_should_match": 1}}


def test_searches_keep_to_the_relation_and_hide_the_children_of_deleted_parents() -> None:
    assert _parent().search(NO_CACHE, Options()) == ([_relation("shop")], [])  # type: ignore[arg-type]
    active, _ = _child().search(NO_CACHE, Options())  # type: ignore[arg-type]
    assert active == [
        _relation("clerk"),
        {"has_parent": {"parent_type": "shop", "query": {"term": {"is_deleted": False}}}},
    ]
    every, _ = _child().search(NO_CACHE, Options(soft_deletes="all"))  # type: ignore[arg-type]
    assert every == [_relation("clerk")]


def test_an_unrefreshed_search_hides_the_children_of_parents_deleted_moments_ago() -> None:
    ctx: Any = _Ctx({"unit-shops": ["s9"]})
    eventual, _ = _child().search(ctx, Options())
    assert eventual[-1] == {"bool": {"must_not": [{"terms": {"shop_id": ["s9"]}}]}}
    refreshed, _ = _child().search(ctx, Options(consistency="immediate"))
    assert len(refreshed) == 2  # the relation and has_parent: exact after a refresh


# -- the query builders ------------------------------------------------------------------


def test_the_query_builders() -> None:
    assert em.has_child(Clerk, "email:a@b").to_dict() == {
        "has_child": {"type": "clerk", "query": {"term": {"email": "a@b"}}}
    }
    assert em.has_child(ShopItem, "price:>3", score_mode="max", min_children=2).to_dict() == {
        "has_child": {
            "type": "shop_item",
            "query": {
                "bool": {
                    "must": [{"range": {"price": {"gt": 3}}}],
                    "filter": [{"term": {"is_deleted": False}}],
                }
            },
            "score_mode": "max",
            "min_children": 2,
        }
    }
    assert em.has_parent(Shop, soft_deletes="all").to_dict() == {
        "has_parent": {"parent_type": "shop", "query": {"match_all": {}}}
    }
    assert em.has_parent(Shop, Q("term", name="x"), score=True).to_dict() == {
        "has_parent": {
            "parent_type": "shop",
            "query": {
                "bool": {
                    "must": [{"term": {"name": "x"}}],
                    "filter": [{"term": {"is_deleted": False}}],
                }
            },
            "score": True,
        }
    }
    assert em.parent_id(Clerk, em.Id("s1", routing="x")).to_dict() == {
        "parent_id": {"type": "clerk", "id": "s1"}
    }


def test_the_query_builders_refuse_bad_input() -> None:
    with pytest.raises(TypeError, match=r"has_child\(\) takes a child model.*not Shop"):
        em.has_child(Shop)
    with pytest.raises(TypeError, match=r"has_parent\(\) takes a parent model.*not Clerk"):
        em.has_parent(Clerk)
    with pytest.raises(TypeError, match=r"parent_id\(\) takes a child model"):
        em.parent_id(Shop, "s1")
    with pytest.raises(ValueError, match="non-empty str"):
        em.parent_id(Clerk, "")
    with pytest.raises(ValueError, match="min_children must be an int >= 1"):
        em.has_child(Clerk, min_children=0)
    with pytest.raises(ValueError, match="over max_children"):
        em.has_child(Clerk, min_children=3, max_children=2)
    with pytest.raises(ValueError, match="score_mode"):
        em.has_child(Clerk, score_mode="best")  # type: ignore[arg-type]
    with pytest.raises(em.QueryValidationError, match=r"unknown field|nope"):
        em.has_child(Clerk, "nope:1")
    with pytest.raises(em.QueryValidationError, match="has no soft deletes"):
        em.has_child(Clerk, soft_deletes="deleted")
    with pytest.raises(em.QueryValidationError, match="names is_deleted"):
        em.has_parent(Shop, "is_deleted:true")


# -- request shapes ----------------------------------------------------------------------


def test_the_search_bodies_are_valid_requests_of_every_checked_branch() -> None:
    checker = load_checker(KIT)
    child_filters, _ = _child().search(NO_CACHE, Options())  # type: ignore[arg-type]
    parents, _ = _parent().search(NO_CACHE, Options())  # type: ignore[arg-type]
    queries = [
        (
            em.has_child(Clerk, "email:a@b", score_mode="avg", min_children=1, max_children=5),
            parents,
        ),
        (em.has_parent(Shop, "name:x", score=True), child_filters),
        (em.parent_id(Clerk, "s1"), child_filters),
    ]
    bodies = [
        {"query": {"bool": {"must": [query.to_dict()], "filter": filters}}, "size": 0}
        for query, filters in queries
    ]
    records = [
        {"method": "POST", "path": "/unit-shops/_search", "params": {}, "body": body}
        for body in bodies
    ]
    assert checker.check(records, spec_dir=str(KIT / "es-spec"), branches="8.18,8.19,9.x") == []
    broken = {"query": {"has_child": {"query": {"match_all": {}}, "kind": "clerk"}}}
    assert checker.check(  # the check can fail: a misspelt member is a violation
        [{"method": "POST", "path": "/unit-shops/_search", "params": {}, "body": broken}],
        spec_dir=str(KIT / "es-spec"),
        branches="8.18,8.19,9.x",
    )


# -- the filter language -----------------------------------------------------------------


def test_a_named_sub_query_is_compiled_by_its_compiler() -> None:
    catalog = Shop.__esmapper__.catalog
    seen: list[str] = []

    def sub(text: str) -> Any:
        seen.append(text)
        return em.has_child(Clerk, text)

    compiled = compile_filter(
        "name:x AND clerk:(email:a OR email:b)", catalog, subqueries={"clerk": sub}
    )
    assert seen == ["email:a OR email:b"] and "clerk" in compiled.fields
    assert compiled.query is not None and compiled.query.to_dict() == {
        "bool": {
            "must": [
                {"term": {"name": "x"}},
                {
                    "has_child": {
                        "type": "clerk",
                        "query": {
                            "bool": {"should": [{"term": {"email": "a"}}, {"term": {"email": "b"}}]}
                        },
                    }
                },
            ]
        }
    }
    field_wins = compile_filter("name:(x)", catalog, subqueries={"name": sub})
    assert field_wins.query is not None and field_wins.query.to_dict() == {"term": {"name": "x"}}
    with pytest.raises(em.QueryValidationError, match=r"in clerk:\(\.\.\.\).*nope") as err:
        compile_filter("clerk:(nope:1)", catalog, subqueries={"clerk": sub})
    assert err.value.field == "clerk"
    with pytest.raises(em.QueryValidationError, match="clerk"):
        compile_filter("clerk:(email:a)", catalog)  # no sub-query of that name: a field


def test_requests_that_cannot_search_go_without_an_unknown_routing() -> None:
    spec = IndexSpec(Clerk.__esmapper__)  # type: ignore[attr-defined]
    assert read_params(spec, "c1") == {"routing": None}  # a GET searches instead
    assert sent_params(spec, "c1") == {}  # an _mget entry, a bulk delete: none sent
    assert sent_params(spec, em.Id("c1", routing="s1")) == {"routing": "s1"}
    assert mget_ids(spec, ["c1", em.Id("c2", routing="s1")]) == {
        "docs": [{"_id": "c1"}, {"_id": "c2", "routing": "s1"}]
    }
    assert unrouted(spec, ["c1", em.Id("c2", routing="s1")]) == ["c1"]
