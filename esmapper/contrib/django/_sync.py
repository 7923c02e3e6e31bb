"""Mirror Django models into Elasticsearch: :func:`sync` (django-elasticsearch-dsl's main
use), written so that two requests saving one row never leave Elasticsearch stale.

``sync(Article, to=ArticleDoc, convert=article_doc)`` connects ``post_save`` and
``post_delete`` of the Django model ``Article`` (and of its proxies and multi-table
children, which Django sends under their own class). A save or delete records the row's primary
key when its database transaction **commits** (``transaction.on_commit``: a rolled-back
transaction writes nothing). Inside a request served by
:class:`~esmapper.contrib.django.middleware.EsmapperMiddleware` the recorded rows are
written when the request's esmapper session ends (committed or rolled back: the database
committed them either way), once per row however often it was saved; outside a request,
at once.

**The write** of one row never sends what the row was when the signal fired: it reads the
row again, in a loop guarded by Elasticsearch's optimistic concurrency:

1. read the document, in real time, with its version (``_seq_no``/``_primary_term``);
2. **then** read the row from the database (``_base_manager``, the alias it was saved to);
3. write ``convert(row)`` over the document on the condition that its version is still
   the one read in 1 (a create when there was none: create-only; no row, or ``convert``
   returning ``None``: a delete, conditioned the same way); nothing is sent when the
   document already holds that content;
4. on a conflict (someone wrote the document since 1), start again at 1;
5. after a create, start again at 1 too (it ends at once when the document holds the row):
   a delete whose write found neither the document nor the row sent nothing, so nothing
   fences a create that read the row before that delete; the check after the create does.

Why no update is lost: let *C* be the last commit of the row. The write that *C* triggers
reads the document after *C* (step 1 follows the commit), so its database read (step 2)
sees *C*'s row. Any write that succeeds after it was conditioned on a version read after
it, so it too read the row after *C*; any write conditioned on an older version fails and
starts again. A write that finds neither document nor row sends nothing, so nothing fences a
create by a writer that read the row before *C* (a delete): that writer reads the document
and the row again after its create (step 5), after *C*, and deletes what it created. So once
the writes end, the document holds the row as of its last commit.
The limits: the database read must see committed data (autocommit or READ COMMITTED, the
default of every Django backend but MySQL's REPEATABLE READ inside a transaction; the
write runs outside the request's transaction); the target model must be ``em.Versioned``
(checked); saves that send no signal (``QuerySet.update``, ``bulk_create``, raw SQL) are
not seen: call :meth:`Sync.write` with their keys, or :meth:`Sync.backfill`; and a write
that fails (Elasticsearch down, ``convert`` raising) after the database committed is logged
(:meth:`Sync.write_committed`), not raised, leaving the document behind until the row's
next save, a :meth:`Sync.write` of its key or a backfill.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import attrs
from django.db import models, router, transaction
from django.db.models.signals import class_prepared, post_delete, post_save

from esmapper.contrib import _request
from esmapper.contrib.django._mapper import get_config, get_mapper
from esmapper.contrib.django.middleware import current_request_state
from esmapper.errors import (
    DocumentNotFoundError,
    DuplicateDocumentError,
    VersionConflictError,
)
from esmapper.model.document import HasDates, SoftDeletes, Versioned

__all__ = ["Sync", "sync"]

D = TypeVar("D")

log = logging.getLogger("esmapper.contrib.django.sync")

#: How many times one row's write starts again after a conflict before giving up.
MAX_ATTEMPTS = 50


class Sync(Generic[D]):
    """The link between a Django model and an esmapper model made by :func:`sync`."""

    def __init__(
        self,
        model: type[models.Model],
        to: type[D],
        convert: Callable[[Any], D | None],
        *,
        id: Callable[[Any], str] = str,
        **session_options: Any,
    ) -> None:
        if not (isinstance(model, type) and issubclass(model, models.Model)):
            raise TypeError(f"sync() takes a Django model class, not {model!r}")
        if not (isinstance(to, type) and issubclass(to, Versioned)):
            raise TypeError(
                f"sync(..., to={getattr(to, '__name__', to)!r}) needs an esmapper model with "
                "the em.Versioned trait: its version guards each write against a lost update"
            )
        if not callable(convert) or not callable(id):
            raise TypeError("sync(): convert= and id= must be callables")
        self.model = model
        self.to = to
        self.convert = convert
        self.id = id
        self.session_options = _request.checked_options(session_options)
        uid = f"esmapper.sync.{model._meta.label}.{to.__module__}.{to.__qualname__}"
        self._uid = uid
        _replace(uid)  # an earlier sync() of the same pair: this one replaces it
        _links[uid] = self
        self._senders: list[type[models.Model]] = []
        # Django sends a save through a proxy or a multi-table child with the class saved
        # (ProxyArticle, not Article), while the row is the model's: each is a sender, the
        # ones defined later too (class_prepared). Not every sender: a receiver for all
        # would make every model's QuerySet.delete() fetch its rows to signal them.
        pending = [model]
        while pending:
            sender = pending.pop()
            self._follow(sender)
            pending.extend(sender.__subclasses__())
        class_prepared.connect(self._prepared, weak=False, dispatch_uid=uid)

    def _follow(self, sender: type[models.Model]) -> None:
        if sender in self._senders:
            return
        self._senders.append(sender)
        post_save.connect(self._saved, sender=sender, weak=False, dispatch_uid=self._uid)
        post_delete.connect(self._deleted, sender=sender, weak=False, dispatch_uid=self._uid)

    def _prepared(self, sender: Any, **kwargs: Any) -> None:
        if issubclass(sender, self.model):  # a proxy or child defined after sync()
            self._follow(sender)

    def disconnect(self) -> None:
        """Stop following the model's saves and deletes."""
        class_prepared.disconnect(dispatch_uid=self._uid)
        for sender in self._senders:
            post_save.disconnect(sender=sender, dispatch_uid=self._uid)
            post_delete.disconnect(sender=sender, dispatch_uid=self._uid)
        self._senders = []
        if _links.get(self._uid) is self:
            del _links[self._uid]

    def _saved(self, sender: Any, instance: Any, using: str, **kwargs: Any) -> None:
        self._on_commit(instance.pk, using)

    def _deleted(self, sender: Any, instance: Any, using: str, **kwargs: Any) -> None:
        self._on_commit(instance.pk, using)

    def _on_commit(self, pk: Any, using: str) -> None:
        transaction.on_commit(lambda: self._committed(pk, using), using=using)

    def _committed(self, pk: Any, using: str) -> None:
        state = current_request_state()
        if state is not None and not state.ended:
            state.record(self, using, pk)  # written when the request's session ends
        else:
            self.write_committed([pk], using)

    def write_committed(self, pks: list[Any], using: str) -> None:
        """:meth:`write` for rows a database commit changed (what the signals call): an
        error is logged (``esmapper.contrib.django.sync``, with the keys to write again),
        never raised, since the database committed: the code that saved, the transaction's
        other ``on_commit`` callbacks and the request's response go on."""
        try:
            self.write(pks, using=using)
        except Exception:
            log.exception(
                "sync of %s to %s: the write of the rows %r (database %r) failed after their "
                "database commit; their documents stay behind until the rows are saved "
                "again, or written with Sync.write(%r) or Sync.backfill()",
                self.model._meta.label,
                self.to.__name__,
                pks,
                using,
                pks,
            )

    def write(self, pks: Iterable[Any], *, using: str | None = None) -> None:
        """Write the rows of ``pks`` (as the database ``using`` holds them now; default:
        the one the model is written to, ``router.db_for_write``) to Elasticsearch, one
        by one, by the loop of the module docstring: the document of a missing row is
        deleted. Raises ``VersionConflictError`` when one row's write met a conflict
        ``MAX_ATTEMPTS`` times in a row, and what the writes raise (its other rows are
        still tried first)."""
        error: BaseException | None = None
        for pk in pks:
            try:
                self._write_one(pk, using)
            except Exception as exc:
                error = error or exc
        if error is not None:
            raise error

    def backfill(self, queryset: Iterable[Any] | None = None) -> int:
        """Write every row of ``queryset`` (default: every row of the model, in the
        database it is written to) through :meth:`write`, reading each row again from the
        queryset's database when it names one (``.using(alias)``); returns how many."""
        if queryset is None:
            queryset = self.model._base_manager.using(router.db_for_write(self.model))
        alias = getattr(queryset, "_db", None)  # set by .using(): None lets write() route
        pks = [row.pk for row in queryset]
        self.write(pks, using=alias)
        return len(pks)

    def _options(self) -> dict[str, Any]:
        return {**get_config().session_options, **self.session_options}

    def _write_one(self, pk: Any, using: str | None) -> None:
        id = self.id(pk)
        reads: dict[str, Any] = {"cache": False}
        if issubclass(self.to, SoftDeletes):
            reads["soft_deletes"] = "all"
        # the database the row is written to: a read replica may not have the commit yet
        rows = self.model._base_manager.using(using or router.db_for_write(self.model))
        for _ in range(MAX_ATTEMPTS):
            with get_mapper().session(**self._options()) as session:
                stored: Any = session.get(self.to, id, **reads)  # 1. the version
                row = rows.filter(pk=pk).first()  # 2. then the row
                wanted = None if row is None else self.convert(row)
                if wanted is None:
                    if stored is None:
                        return
                    session.remove(stored)
                elif stored is None:
                    doc: Any = wanted
                    doc.id = id
                    session.add(doc)
                else:
                    _copy(wanted, stored)
                try:
                    session.commit()  # 3. conditioned on the version of 1
                except (VersionConflictError, DuplicateDocumentError, DocumentNotFoundError):
                    session.rollback()  # 4. someone wrote it since 1: again
                    continue
                if stored is not None or wanted is None:
                    return
                # 5. a create: once more, to check it (the row may be gone since 2, and the
                # delete's own write, finding no document, had nothing to condition on)
        raise VersionConflictError(
            f"{self.to.__name__} {id!r}: the write from {self.model._meta.label} met a "
            f"conflict {MAX_ATTEMPTS} times in a row",
            ids=[id],
        )


#: The live links by their ``dispatch_uid``: a second sync() of a pair disconnects the first.
_links: dict[str, Sync[Any]] = {}


def _replace(uid: str) -> None:
    earlier = _links.get(uid)
    if earlier is not None:
        earlier.disconnect()


def _copy(source: Any, target: Any) -> None:
    """``source``'s values onto ``target`` (a document read with its version), but its id
    and version, and the dates when ``source`` leaves them unset."""
    kept = {"id", "version"}
    if isinstance(target, HasDates):
        kept |= {
            name for name in ("created_utc", "updated_utc") if getattr(source, name, None) is None
        }
    for field in attrs.fields(type(source)):
        if field.name not in kept and not field.name.startswith("_"):
            value = getattr(source, field.name)
            if getattr(target, field.name) != value:
                setattr(target, field.name, value)


def sync(
    model: type[models.Model],
    *,
    to: type[D],
    convert: Callable[[Any], D | None],
    id: Callable[[Any], str] = str,
    **session_options: Any,
) -> Sync[D]:
    """Mirror ``model`` into the esmapper model ``to`` (see the module docstring):
    ``convert(row)`` returns the document for a row (its id is set from the row's primary
    key, ``id(pk)``, default ``str``), or ``None`` for a row that has no document (deleted
    from Elasticsearch). ``session_options`` are added to ``settings.ESMAPPER["session"]``
    for the writes. Raises ``TypeError`` when ``to`` is not ``em.Versioned`` (or for an
    unknown option), ``ValueError`` for a bad option value. Call it once,
    e.g. in your ``AppConfig.ready()`` (calling it again for the same pair replaces the
    receivers)."""
    return Sync(model, to, convert, id=id, **session_options)
