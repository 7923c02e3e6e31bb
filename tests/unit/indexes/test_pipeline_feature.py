"""Ingest pipelines as a feature (:mod:`esmapper.indexes._pipeline_feature`): attached to
the models that name one, it shapes their create/index actions and tells the read-back
what an applied write stored; without a server (the pipeline is a named one: nothing to
create)."""

from __future__ import annotations

from typing import Any

import esmapper as em
from esmapper.bulk import BulkAction
from esmapper.indexes._pipeline_feature import Pipelines
from esmapper.indexes.spec import IndexSpec


class Piped(em.Document):
    class Index:
        name = "unit-piped"
        pipeline = "unit-tagger"

    title: str = ""


class Plain(em.Document):
    class Index:
        name = "unit-unpiped"


class _Ctx:
    client: Any = None

    def spec(self, model: type) -> IndexSpec:
        return IndexSpec(model.__esmapper__, "")  # type: ignore[attr-defined]


def _feature() -> Pipelines:
    feature = Piped.__esmapper__.points.feature("pipeline")
    assert isinstance(feature, Pipelines)
    return feature


def test_only_models_with_a_pipeline_get_the_feature() -> None:
    assert Plain.__esmapper__.points.feature("pipeline") is None
    points = Piped.__esmapper__.points
    assert [h.__self__ for h in points.shape] == [_feature()]  # type: ignore[attr-defined]
    assert [h.__self__ for h in points.expected_source] == [_feature()]  # type: ignore[attr-defined]
    assert [h.__self__ for h in points.by_query] == [_feature()]  # type: ignore[attr-defined]


def test_create_and_index_actions_run_it_updates_and_deletes_cannot() -> None:
    actions = [
        BulkAction("create", "unit-piped", "1", {"title": "a"}),
        BulkAction("index", "unit-piped", "2", {"title": "b"}),
        BulkAction("update", "unit-piped", "3", {"doc": {"title": "c"}}),
        BulkAction("delete", "unit-piped", "4"),
    ]
    _feature().shape(_Ctx(), actions)  # type: ignore[arg-type]
    assert [a.pipeline for a in actions] == ["unit-tagger", "unit-tagger", None, None]
    ctx = _Ctx()
    assert _feature().by_query(ctx, "update_by_query") == {"pipeline": "unit-tagger"}  # type: ignore[arg-type]
    assert _feature().by_query(ctx, "delete_by_query") == {}  # type: ignore[arg-type]


def test_an_action_that_runs_none_is_expected_as_sent() -> None:
    action = BulkAction("index", "unit-piped", "1", {"title": "a"})
    assert _feature().expected_source(_Ctx(), action, action.body) is action.body  # type: ignore[arg-type]
