"""``highlight=`` of several fields in the form each server version declares: one object
keyed by field on 8.18-9.0, a list of single-key objects from 9.1. The mapper reads the
version once (``GET /``), only when the form depends on it."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper.testing._rules import Exchange, Reply
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper


class Article(em.Document):
    class Index:
        name = "articles"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    title: str = em.field(em.Text(), default="")
    body: str = em.field(em.Text(), default="")


class _Highlights:
    """Keeps the ``highlight`` of every search sent through the proxy."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def before(self, exchange: Exchange) -> Reply | None:
        body = exchange.json()
        if exchange.path.endswith("/_search") and isinstance(body, dict):
            self.sent.append(body.get("highlight"))
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        return reply


@pytest.mark.parametrize(
    ("version", "fields"),
    [
        ("8.18.2", {"title": {}, "body": {}}),
        ("8.19.0", {"title": {}, "body": {}}),
        ("9.0.4", {"title": {}, "body": {}}),
        ("9.1.0", [{"title": {}}, {"body": {}}]),
        ("9.5.1", [{"title": {}}, {"body": {}}]),
    ],
)
def test_several_fields_are_highlighted_in_the_form_of_the_version(
    make_mapper: MakeMapper, es_url: str, version: str, fields: Any
) -> None:
    with ClusterProxy(es_url, lifetime=120, version=version) as cluster:
        seen = _Highlights()
        cluster.add_rule(seen)
        repo = make_mapper(Article, url=cluster.url, configure=True).repository(Article)
        repo.add(Article(title="hello world", body="hello there"), consistency="wait")
        cluster.reset_counts()
        for _ in range(2):
            found = repo.find("hello", highlight=["title", "body"])
            assert found.hits[0].highlight == {
                "title": ["<em>hello</em> world"],
                "body": ["<em>hello</em> there"],
            }
        assert cluster.count(r"^/$", method="GET") == 1  # read once, then kept
    assert seen.sent == [{"fields": fields}, {"fields": fields}]


def test_one_field_needs_no_version(make_mapper: MakeMapper, es_url: str) -> None:
    with ClusterProxy(es_url, lifetime=120, version="9.1.0") as cluster:
        seen = _Highlights()
        cluster.add_rule(seen)
        repo = make_mapper(Article, url=cluster.url, configure=True).repository(Article)
        repo.add(Article(title="hello world"), consistency="wait")
        found = repo.find("hello", highlight="title")
        assert found.hits[0].highlight == {"title": ["<em>hello</em> world"]}
        assert cluster.count(r"^/$", method="GET") == 0
    assert seen.sent == [{"fields": {"title": {}}}]
