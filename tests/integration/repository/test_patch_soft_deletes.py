"""A patch that sets ``is_deleted`` is a removal, like a save that does (issue 25, item 10):
the false -> true transition is published as ``REMOVED`` and the document is hidden from
the next search, whichever patch type and path made the change (the reference's patches
always say ``SAVED``; esmapper does not keep that limitation)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import esmapper as em
from esmapper import signals

from .models import Employee

Published = list[tuple[str | None, em.ChangeType]]


@pytest.fixture
def published() -> Iterator[Published]:
    seen: Published = []

    def receiver(sender: type, message: em.EntityChanged, **_: object) -> None:
        seen.append((message.id, message.change_type))

    with signals.entity_changed.connected_to(receiver, sender=Employee):
        yield seen


@pytest.fixture
def staff(employees: em.Repository[Employee]) -> list[Employee]:
    return employees.add(
        [Employee(id=f"p{i}", name=f"P{i}", age=30 + i) for i in range(3)], consistency="wait"
    )


DELETE: dict[str, Callable[[em.Repository[Employee], list[str]], object]] = {
    "partial by id": lambda r, ids: r.patch(ids[0], em.PartialPatch({"is_deleted": True})),
    "partial by ids": lambda r, ids: r.patch(ids, em.PartialPatch({"is_deleted": True})),
    "json by id": lambda r, ids: r.patch(
        ids[0], em.JsonPatch([{"op": "replace", "path": "/is_deleted", "value": True}])
    ),
    "json by ids": lambda r, ids: r.patch(
        ids, em.JsonPatch([{"op": "replace", "path": "/is_deleted", "value": True}])
    ),
    "action by id": lambda r, ids: r.patch(
        ids[0], em.ActionPatch(lambda d: setattr(d, "is_deleted", True))
    ),
    "action by ids": lambda r, ids: r.patch(
        ids, em.ActionPatch(lambda d: setattr(d, "is_deleted", True))
    ),
    "partial patch_all": lambda r, ids: r.patch_all(
        f"id:({' OR '.join(ids)})", em.PartialPatch({"is_deleted": True})
    ),
}


@pytest.mark.parametrize("how", list(DELETE))
def test_a_patch_setting_is_deleted_is_a_removal(
    employees: em.Repository[Employee], staff: list[Employee], published: Published, how: str
) -> None:
    ids = ["p0"] if "by id" in how else ["p0", "p1"]
    DELETE[how](employees, ids)
    # before: SAVED, whatever the patch set
    assert sorted(published) == [(i, em.ChangeType.REMOVED) for i in ids]
    assert sorted(d.id for d in employees.find()) == sorted({"p0", "p1", "p2"} - set(ids))
    assert employees.get("p0") is None


def test_a_patch_of_a_document_already_deleted_or_restoring_one_is_a_save(
    employees: em.Repository[Employee], staff: list[Employee], published: Published
) -> None:
    employees.patch("p0", em.PartialPatch({"is_deleted": True}))
    published.clear()
    employees.patch("p0", em.PartialPatch({"is_deleted": True, "age": 1}))  # no transition
    employees.patch("p0", em.PartialPatch({"is_deleted": False}))  # a restore
    employees.patch("p1", em.PartialPatch({"age": 5}))
    assert published == [
        ("p0", em.ChangeType.SAVED),
        ("p0", em.ChangeType.SAVED),
        ("p1", em.ChangeType.SAVED),
    ]
    assert sorted(d.id for d in employees.find(consistency="immediate")) == ["p0", "p1", "p2"]
