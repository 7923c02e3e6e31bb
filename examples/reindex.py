"""Reindexing: change a mapping by bumping the model's ``Index.version``.

``python -m examples.reindex`` (from the repository root) stores products with version 1 of
the model (``title`` is a keyword: exact matches only), then declares version 2 of the same
index (``title`` becomes full text, a change Elasticsearch cannot make in place).
``configure_indexes()`` creates ``products-v2`` but reports the alias as ``outdated``; the
reindex copies the documents (through a Painless script), swaps the alias atomically and
deletes ``products-v1``. ``mapper.migrate()`` (or ``esmapper migrate``) does the same for
every outdated model.
"""

from __future__ import annotations

import esmapper as em
from esmapper.indexes import ReindexProgress, reindex
from examples._common import elasticsearch_url, run_main

SETTINGS = {"number_of_shards": 1, "number_of_replicas": 0}


class ProductV1(em.Document, em.HasDates, em.Versioned):
    class Index:
        name = "products"  # the alias; physical index products-v1
        version = 1
        settings = SETTINGS

    sku: str = em.field(em.Keyword(), default="")
    title: str = em.field(em.Keyword(), default="")  # exact values only
    price: int = em.field(em.Integer(), default=0)


class ProductV2(em.Document, em.HasDates, em.Versioned):
    """The next version of the model (in an application: the same class, edited)."""

    class Index:
        name = "products"  # same alias; physical index products-v2
        version = 2
        settings = SETTINGS
        # Painless run on each document copied into version 2 (keyed by target version).
        reindex_scripts = {2: "ctx._source.currency = 'EUR'"}  # noqa: RUF012

    sku: str = em.field(em.Keyword(), default="")
    title: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")  # full text
    price: int = em.field(em.Long(), default=0)
    currency: str = em.field(em.Keyword(), default="")


def show_progress(p: ReindexProgress) -> None:
    if p.message:  # one line per step; p.done/p.total count documents within a pass
        print(f"  {p.percent:3d}% {p.phase}: {p.message}")


def alias_target(mapper: em.Mapper, alias: str) -> list[str]:
    return sorted(mapper.client.indices.get_alias(name=alias).body)


def main(url: str | None = None, *, index_prefix: str = "") -> None:
    with elasticsearch_url(url) as address:
        # -- Version 1: an application that has been running for a while.
        with em.Mapper(address, models=[ProductV1], index_prefix=index_prefix) as mapper:
            (state,) = mapper.configure_indexes()
            print(f"v1: {state.alias} -> {state.current_index} ({state.action})")
            v1 = mapper.repository(ProductV1)
            titles = ["Blue widget", "Red widget", "Gadget", "Widget stand", "Sprocket"]
            v1.add(
                [ProductV1(sku=f"sku-{i}", title=t, price=100 * i) for i, t in enumerate(titles)],
                consistency="wait",
            )
            print(f"v1: {v1.count()} products; title:widget finds {v1.count('title:widget')}")

        # -- Version 2 is deployed: same alias, new mapping.
        with em.Mapper(address, models=[ProductV2], index_prefix=index_prefix) as mapper:
            (state,) = mapper.configure_indexes()  # never reindexes by itself
            print(
                f"v2: configure_indexes -> {state.action}: alias {state.alias} still on "
                f"{state.current_index}, expected {state.expected_index}"
            )
            result = reindex(mapper, ProductV2, progress=show_progress)
            print(
                f"reindex: {result.status}, copied {result.copied}, "
                f"{result.old_index} -> {result.new_index}, old deleted: {result.old_deleted}"
            )
            print(f"alias {state.alias} -> {alias_target(mapper, state.alias)}")

            v2 = mapper.repository(ProductV2)
            found = v2.find("title:widget", sort="sku")
            print(f"v2: {v2.count()} products; title:widget finds {found.total}:")
            for p in found:  # versions start again in the new index: re-read old copies
                print(f"  {p.sku} {p.title!r} {p.price} {p.currency} version={p.version}")
            print(f"reindex again -> {reindex(mapper, ProductV2).status}")  # nothing to do


if __name__ == "__main__":
    run_main(main)
