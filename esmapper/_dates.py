"""The date rule of writes, one owner for every path: the attribute ``ModelInfo.updated_field``
(``updated_utc``, or what ``class Index: dates`` names) is set to "now" by every write, and
``ModelInfo.created_field`` is corrected to "now" when it is missing, before 1971 or more
than a minute in the future (a clock a little ahead is not an error), and left alone
otherwise.

Who applies it where:

- ``add``/``save``: :func:`esmapper._writes._prepare` on the document (inline, the hot
  path, with :func:`needs_fixing`);
- a Json/Action patch (by id, by ids, ``patch_all``): :func:`stamp_source` /
  :func:`stamp_document` on the patched source or document, each time it is built (so a
  conflict round stamps again);
- a ``PartialPatch`` written from a scan (``patch_all``, ``patch(ids)`` run as one, a
  feature that reads the stored document): :func:`partial_dates` adds the updated date
  (unless the caller gave one) and, when the stored created date needs fixing, the
  corrected one to the partial document: exact, since the write is conditioned on the
  version scanned;
- a ``ScriptPatch`` (by id, scanned, ``_update_by_query``): :func:`script_dates` appends
  the assignments to the script, in the same request (the caller's ``updated`` param
  wins). Painless compares no stored date strings portably, so the server-side
  correction covers a *missing* created date only;
- a ``PartialPatch`` by id is one unconditioned Update API ``doc`` merge: it sets the
  updated date but, reading nothing, cannot judge the stored created date (the Update API
  takes a ``doc`` or a ``script``, not both).

The timestamp is taken once per call (a server-side ``retry_on_conflict`` keeps it, a
client-side conflict round of a Json/Action patch takes the call's again).
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from esmapper.model.dates import format_datetime, parse_datetime

if TYPE_CHECKING:
    from esmapper.model.info import ModelInfo

__all__ = [
    "CLOCK_SKEW",
    "NOW_PARAM",
    "after_script",
    "needs_fixing",
    "partial_dates",
    "script_dates",
    "source_needs_fixing",
    "stamp_document",
    "stamp_source",
]

log = logging.getLogger("esmapper.writes")

#: How far in the future a supplied created date may lie before it counts as invalid.
CLOCK_SKEW: Final = _dt.timedelta(minutes=1)

#: The script parameter holding "now" when the updated field's own name is taken
NOW_PARAM: Final = "__esm_now"

_datetime = _dt.datetime


def needs_fixing(created: Any, latest: _dt.datetime) -> bool:
    """A created date that is missing, before 1971 or later than ``latest`` (now plus
    :data:`CLOCK_SKEW`) is replaced (so is a stored value the model could not read as a
    date: see esmapper.model.lenient)."""
    return not isinstance(created, _datetime) or created.year < 1971 or created > latest


def source_needs_fixing(value: Any, latest: _dt.datetime) -> bool:
    """:func:`needs_fixing` of a created date as stored in ``_source`` (ISO text or epoch
    milliseconds); a value that is not a date needs fixing."""
    if value is None or isinstance(value, bool):
        return True
    try:
        return needs_fixing(parse_datetime(value), latest)
    except (TypeError, ValueError, OverflowError):
        return True


def stamp_source(info: ModelInfo, source: dict[str, Any], now: _dt.datetime) -> None:
    """The date rule on a ``_source`` patched client-side (a JsonPatch's result), in
    place: the updated date is always overwritten (as a save does)."""
    text = format_datetime(now)
    created = info.created_field
    if created is not None and source_needs_fixing(source.get(created), now + CLOCK_SKEW):
        source[created] = text
    if info.updated_field is not None:
        source[info.updated_field] = text


def stamp_document(info: ModelInfo, doc: Any, now: _dt.datetime) -> None:
    """The date rule on a document patched client-side (an ActionPatch's), in place."""
    created = info.created_field
    if created is not None and needs_fixing(getattr(doc, created, None), now + CLOCK_SKEW):
        setattr(doc, created, now)
    if info.updated_field is not None:
        setattr(doc, info.updated_field, now)


def partial_dates(
    info: ModelInfo,
    doc: Mapping[str, Any],
    now: _dt.datetime,
    stored: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """A PartialPatch's document with the dates: the updated one unless the caller gave
    it (logged at DEBUG), the created one when ``stored`` (the source the write is
    conditioned on; ``None``: not read) has one that needs fixing and the patch sets
    none."""
    out = dict(doc)
    text = format_datetime(now)
    updated, created = info.updated_field, info.created_field
    if updated is not None:
        if updated in out:
            log.debug("%s patch gives %s: kept, not set to now", info.name, updated)
        else:
            out[updated] = text
    if (
        created is not None
        and stored is not None
        and created not in out
        and source_needs_fixing(stored.get(created), now + CLOCK_SKEW)
    ):
        out[created] = text
    return out


def script_dates(
    info: ModelInfo, source: str, params: Mapping[str, Any] | None, now: _dt.datetime
) -> tuple[str, dict[str, Any]]:
    """A ScriptPatch's ``(source, params)`` with the date assignments appended after the
    caller's script (Elasticsearch reads ``ctx.op`` at the end: ``'none'`` still writes
    nothing): the updated field set to the param named after it (its last segment), unless
    the caller's params give that name already (then the caller's script sets it: nothing
    is injected, logged at DEBUG), and a missing created date set to now."""
    out = dict(params or {})
    lines: list[str] = []
    updated, created = info.updated_field, info.created_field
    text = format_datetime(now)
    if updated is not None:
        key = updated.rsplit(".", 1)[-1]
        if key in out:  # the caller's script sets it: nothing injected
            log.debug("%s script gives params.%s: the date is not injected", info.name, key)
        else:
            out[key] = text
            lines.append(f"ctx._source.{updated} = params.{key};")
    if created is not None:
        out[NOW_PARAM] = text
        lines.append(
            f"if (ctx._source.{created} == null) {{ ctx._source.{created} = params.{NOW_PARAM}; }}"
        )
    if not lines:
        return source, out
    return after_script(source, "\n".join(lines)), out


#: a top-level Painless function declaration (``int f(def x) {``): functions come before
#: the statements, so such a script cannot be wrapped in a block
_FUNCTION = re.compile(
    r"^\s*(?!return\b|throw\b|new\b)[A-Za-z_][\w.]*(?:\[\])*\s+[A-Za-z_]\w*\s*\("
)


def after_script(source: str, statements: str) -> str:
    """``source`` followed by ``statements`` in one valid Painless script. The caller's
    script runs in a block (``if (ctx != null) { ... }``; Painless refuses a constant
    condition): a block's last statement needs no ``;``, and nothing is added after it, so
    a script ending without ``;``, with a ``}`` (Painless has no empty statement: ``};``
    does not compile) or with a ``//`` comment runs as sent alone. A script that declares
    functions (they must come first) is followed by a new line instead, after a ``;`` when
    it ends in neither ``;`` nor ``}``."""
    if _FUNCTION.match(source):
        body = source.rstrip()
        return body + ("\n" if body.endswith((";", "}")) else ";\n") + statements
    return "if (ctx != null) {\n" + source + "\n}\n" + statements
