"""``repo.update_with_retry(id, fn)``: read, change, save with the version check; a
conflict re-reads and calls ``fn`` again."""

from __future__ import annotations

import pytest

import esmapper as em
from tests.integration.conftest import MakeMapper

from .models import Employee


class Unversioned(em.Document):
    class Index:
        name = "unversioned"

    age: int = 0


def test_changes_and_saves_the_document(employees: em.Repository[Employee]) -> None:
    employees.add(Employee(id="a", name="Ann", age=30), consistency="wait")
    saved = employees.update_with_retry("a", lambda e: setattr(e, "age", e.age + 1))
    assert saved.age == 31
    stored = employees.get("a")
    assert stored is not None and stored.age == 31 and stored.version == saved.version


def test_a_conflict_reads_again_and_applies_fn_to_the_fresh_copy(
    employees: em.Repository[Employee],
) -> None:
    employees.add(Employee(id="a", name="Ann", age=30), consistency="wait")
    calls: list[int] = []

    def bump(e: Employee) -> None:
        calls.append(e.age)
        if len(calls) == 1:  # another writer saves between our read and our save
            other = employees.get("a")
            assert other is not None
            other.age = 40
            employees.save(other)
        e.age += 1

    saved = employees.update_with_retry("a", bump)
    assert calls == [30, 40]  # the second call saw the other writer's change
    assert saved.age == 41
    assert employees.get("a").age == 41  # type: ignore[union-attr]


def test_gives_up_after_the_retries_with_the_conflict(
    employees: em.Repository[Employee],
) -> None:
    employees.add(Employee(id="a", name="Ann", age=30), consistency="wait")
    calls = 0

    def always_raced(e: Employee) -> None:
        nonlocal calls
        calls += 1
        other = employees.get("a")
        assert other is not None
        other.age += 100
        employees.save(other)
        e.age = -1

    with pytest.raises(em.VersionConflictError):
        employees.update_with_retry("a", always_raced, retries=2)
    assert calls == 3  # the first try and two retries
    assert employees.get("a").age == 330  # type: ignore[union-attr]  # ours never landed


def test_returning_false_saves_nothing(employees: em.Repository[Employee]) -> None:
    first = employees.add(Employee(id="a", name="Ann", age=30), consistency="wait")
    unchanged = employees.update_with_retry("a", lambda e: False)
    assert unchanged.version == first.version


def test_a_missing_or_hidden_id_raises_not_found(employees: em.Repository[Employee]) -> None:
    with pytest.raises(em.DocumentNotFoundError, match='"nope"'):
        employees.update_with_retry("nope", lambda e: None)
    employees.add(Employee(id="gone", is_deleted=True), consistency="wait")
    with pytest.raises(em.DocumentNotFoundError):
        employees.update_with_retry("gone", lambda e: None)
    revived = employees.update_with_retry(
        "gone", lambda e: setattr(e, "is_deleted", False), soft_deletes="all"
    )
    assert revived.is_deleted is False


def test_what_fn_raises_propagates_and_nothing_is_saved(employees: em.Repository[Employee]) -> None:
    employees.add(Employee(id="a", name="Ann", age=30), consistency="wait")
    with pytest.raises(em.DocumentValidationError):
        employees.update_with_retry("a", lambda e: setattr(e, "age", "old"))
    assert employees.get("a").age == 30  # type: ignore[union-attr]


def test_a_model_without_versions_is_refused(make_mapper: MakeMapper) -> None:
    repo = make_mapper(Unversioned, configure=True).repository(Unversioned)
    with pytest.raises(TypeError, match="needs a versioned model: Unversioned"):
        repo.update_with_retry("x", lambda d: None)
