"""A model and a repository subclass with the cache hooks (tests of issue 30, item 3): the
reference's UserRepository, whose lookup by email is cached under a key of its own."""

from __future__ import annotations

import datetime as dt
from typing import Any

import esmapper as em
from esmapper.signals import ChangeType, ModifiedDocument


class Person(em.Document, em.Versioned):
    class Index:
        name = "hooked_people"

    name: str = em.field(em.Keyword(), default="")
    email: str = em.field(em.Keyword(), default="")
    dept: str = em.field(em.Keyword(), default="")
    visits: int = 0


def email_key(email: str) -> str:
    return f"email:{email.strip().lower()}"


class PersonRepository(em.Repository[Person]):
    """Records what each hook was given, and keeps people cached by email."""

    def __init__(self, mapper: em.Mapper, model: type[Person]) -> None:
        super().__init__(mapper, model)
        #: ("invalidate", change_type, [(value email, original email)]), ...
        self.calls: list[tuple[Any, ...]] = []
        self.fail = False

    def get_by_email(self, email: str, **options: Any) -> Person | None:
        query = f'email:"{email.strip().lower()}"'
        return self.find_one(query, cache_key=email_key(email), **options)

    def invalidate_cache_for(
        self, documents: list[ModifiedDocument], change_type: ChangeType
    ) -> None:
        pairs = [
            (
                None if d.value is None else d.value.email,
                None if d.original is None else d.original.email,
            )
            for d in documents
        ]
        self.calls.append(("invalidate", change_type, pairs))
        if self.fail:
            raise RuntimeError("the hook failed")
        people = em.union_original_and_modified(documents)
        self.invalidate_cache([email_key(p.email) for p in people if p.email])

    def invalidate_cache_by_query(self, filter: Any, change_type: ChangeType) -> None:
        self.calls.append(("by_query", change_type, filter))
        self.invalidate_cache(f"list:{filter}")

    def add_to_cache(
        self, documents: list[Person], *, expires_in: float | None, dirty_read: bool
    ) -> None:
        self.calls.append(("add", [d.email for d in documents], expires_in, dirty_read))
        keyed = {email_key(d.email): d for d in documents if d.email}
        self.add_to_cache_with_keys(keyed, expires_in=expires_in)

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] == kind]


def later(minutes: float) -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=minutes)
