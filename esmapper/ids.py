"""Document ids: composition, checking and time-sortable ``ObjectId``\\s.

This module is the only place in esmapper that composes or checks a document id.

Composite ids
-------------
``compose_id("acme", "corp_42", "MyApp.Handlers.OrderHandler")`` gives
``"acme:corp_42:MyApp.Handlers.OrderHandler"``. Each term is percent-encoded as RFC 3986
defines it: every character outside ``A-Z a-z 0-9 - . _ ~`` becomes ``%XX`` for each of its
UTF-8 bytes, with upper-case hex (``"a/b"`` -> ``"a%2Fb"``, ``"é"`` -> ``"%C3%A9"``), the
same as .NET's ``Uri.EscapeDataString``. The encoded terms are joined with ``:``. An optional
constant ``prefix`` (e.g. ``"inbox:"``) is prepended as is. ``decompose_id`` undoes it.

Why this format:

* **Injectivity.** A plain join (``"_".join(terms)``) is ambiguous as soon as a term can
  contain the separator: ``("acme", "corp_42", "H")`` and ``("acme_corp", "42", "H")`` both
  render ``acme_corp_42_H``, and an idempotency store then drops the second message as an
  already-seen duplicate, silently. Escaping ``:`` inside the terms means distinct term
  tuples always give distinct ids.
* **Escape the escape.** The escape character itself (``%``) is escaped, so the literal
  text ``shoes%2Fred`` (-> ``shoes%252Fred``) can never collide with ``shoes/red``
  (-> ``shoes%2Fred``). A scheme that escapes ``/`` but not its own escape character
  silently overwrites one document with another.
* **Always encoded.** Even a single term is encoded, so an id never changes
  shape with the number of terms. A plain ``Document.id`` chosen by the user is *not*
  composed: it is written verbatim, but still goes through :func:`check_id`.
* **512 bytes.** Elasticsearch refuses an ``_id`` over 512 bytes of UTF-8. Encoding makes
  ids longer (3 bytes per escaped UTF-8 byte), so the size is checked after encoding,
  prefix included, when the id is built, with an :class:`~esmapper.errors.IdTooLongError`
  that names the limit, the actual size and the term to shorten.
* **Never truncate.** Cutting an id to fit could give two documents one key, which is the
  very defect the encoding exists to prevent. Too long is an error, always.
* **No unpaired surrogates.** A ``str`` holding a surrogate code point (U+D800-U+DFFF) has no
  UTF-8 form; encoders that "repair" it map every such string to the same replacement
  character and merge distinct ids. It is refused with
  :class:`~esmapper.errors.InvalidIdTermError`: something upstream is cutting strings
  mid-character.

:func:`check_id` applies the length and surrogate rules to every id the mapper writes,
composed or not.

ObjectId
--------
``ObjectId.new()`` makes a 24-character lowercase hex id from 12 bytes: a 4-byte big-endian
Unix time in seconds, 5 random bytes chosen once per process (and again in a forked child),
and a 3-byte counter that starts at a random value. Ids made later in a process sort after
earlier ones as strings, within one second thanks to the counter (until the counter wraps,
after at least 2**23 ids, since it starts in the lower half of its range), and across
processes to the second. ``ObjectId.new(at=date)`` encodes a given time instead of now, for
time-series documents whose id must carry the document date.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Final
from urllib.parse import quote, unquote_to_bytes

from esmapper.errors import IdTooLongError, InvalidIdTermError

__all__ = [
    "MAX_ID_BYTES",
    "Id",
    "ObjectId",
    "check_id",
    "compose_id",
    "decompose_id",
    "id_term",
    "routing_of",
]

MAX_ID_BYTES: Final = 512
"""Elasticsearch's limit on the size of a document ``_id``, in UTF-8 bytes."""

# A character that is neither RFC 3986 unreserved nor the ":" separator. When the ":"-joined
# terms hold none, and exactly len(terms) - 1 colons, no term needs escaping and the joined
# string is the id (the fast path of compose_id).
_NOT_UNRESERVED_OR_COLON: Final = re.compile(r"[^A-Za-z0-9._~:-]").search
# "%" not followed by two hex digits.
_BAD_PERCENT: Final = re.compile(r"%(?![0-9A-Fa-f]{2})").search

_PREVIEW_CHARS: Final = 60


def _preview(text: str) -> str:
    """A short repr of ``text`` for error messages (the id itself is never cut)."""
    if len(text) <= _PREVIEW_CHARS:
        return repr(text)
    return repr(text[:_PREVIEW_CHARS]) + f"... ({len(text)} characters)"


def _surrogate_error(
    exc: UnicodeEncodeError,
    text: str,
    what: str,
    term_index: int | None,
    index: str | None = None,
) -> InvalidIdTermError:
    char = text[exc.start]
    return InvalidIdTermError(
        f"{what} contains an unpaired surrogate U+{ord(char):04X} at position {exc.start} "
        f"(of {len(text)} characters); something upstream is cutting strings "
        f"mid-character. Ids are never repaired, because repairing would merge distinct ids",
        term_index=term_index,
        index=index,
    )


class Id(str):
    """A document id with the routing that finds it: ``em.Id("emp-1", routing="org-1")``.

    A child document of a parent/child join (:mod:`esmapper._join`) is stored on its
    parent's shard, so a read or write of it by id needs that routing (its parent's id);
    ``Id`` carries it. It *is* the id string (``Id("a", routing="b") == "a"``, same hash),
    so it goes wherever an id goes (``get``, ``get_many``, ``exists``, ``remove``,
    ``patch``, a session's reads) and the routing travels with it to the one place that
    turns it into a request parameter (the model's ``read_params``/``shape`` points).
    A plain ``str`` is an id without routing; a model that is not a child of a join
    routes as it always does and ignores an ``Id``'s routing. ``routing`` must be a
    non-empty ``str`` or ``None`` (``TypeError``/``ValueError`` otherwise).
    """

    __slots__ = ("routing",)
    routing: str | None

    def __new__(cls, value: str, routing: str | None = None) -> Id:
        if not isinstance(value, str):
            raise TypeError(f"Id value must be a str, not {type(value).__name__}")
        if routing is not None:
            if not isinstance(routing, str):
                raise TypeError(f"Id routing must be a str or None, not {type(routing).__name__}")
            if not routing:
                raise ValueError("Id routing must not be empty (None: no routing)")
        self = super().__new__(cls, value)
        self.routing = routing
        return self

    @property
    def value(self) -> str:
        """The id as a plain ``str``."""
        return str.__str__(self)

    def __repr__(self) -> str:
        if self.routing is None:
            return f"Id({self.value!r})"
        return f"Id({self.value!r}, routing={self.routing!r})"

    def __getnewargs__(self) -> tuple[str, str | None]:  # type: ignore[override]
        return (self.value, self.routing)


def routing_of(id: object) -> str | None:
    """The routing ``id`` carries: an :class:`Id`'s, ``None`` for a plain ``str``."""
    return id.routing if type(id) is Id else None


def check_id(id: str, *, index: str | None = None) -> str:
    """Check an id the mapper is about to write, and return it unchanged.

    The id must be a non-empty ``str`` (``TypeError`` / ``ValueError`` otherwise), without
    surrogate code points (:class:`~esmapper.errors.InvalidIdTermError`, giving the
    position) and at most :data:`MAX_ID_BYTES` bytes of UTF-8
    (:class:`~esmapper.errors.IdTooLongError`, naming the limit and the actual size). It is
    never truncated or altered. ``index`` is only carried into the error.
    """
    # Fast path: an ASCII str has one byte per character and cannot hold a surrogate.
    if type(id) is str and id.isascii() and 0 < len(id) <= MAX_ID_BYTES:
        return id
    if not isinstance(id, str):
        raise TypeError(f"a document id must be a str, not {type(id).__name__}")
    if not id:
        raise ValueError("a document id must not be empty")
    try:
        size = len(id.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise _surrogate_error(exc, id, "the id", None, index) from None
    if size > MAX_ID_BYTES:
        raise IdTooLongError(
            f"id is {size} bytes (UTF-8), over Elasticsearch's {MAX_ID_BYTES}-byte limit: "
            f"{_preview(id)}; shorten it (ids are never truncated)",
            limit=MAX_ID_BYTES,
            actual=size,
            terms=(size,),
            longest_term=0,
            index=index,
            ids=(id,),
        )
    return id


def _check_term(term: str, position: int) -> None:
    """Raise InvalidIdTermError if ``term`` holds a surrogate code point."""
    try:
        term.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _surrogate_error(exc, term, f"id term {position}", position) from None


def _prefix_bytes(prefix: str) -> int:
    if not isinstance(prefix, str):
        raise TypeError(f"compose_id() prefix must be a str, not {type(prefix).__name__}")
    if prefix.isascii():
        return len(prefix)
    try:
        return len(prefix.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise _surrogate_error(exc, prefix, "the id prefix", None) from None


def id_term(value: object) -> str:
    """The id term of a field value: strings as they are, anything else through ``str()``
    (the one rule for ``id_fields``, shared by ``add`` and the re-key tool)."""
    return value if isinstance(value, str) else str(value)


def compose_id(*terms: str, prefix: str | None = None, names: Sequence[str] | None = None) -> str:
    """Compose a document id from one or more terms.

    Each term is percent-encoded (RFC 3986 unreserved characters kept, UTF-8, upper-case
    hex) and the terms are joined with ``:``; ``prefix`` is prepended unencoded. Distinct
    term tuples always give distinct ids, and :func:`decompose_id` gives the terms back::

        compose_id("acme", "corp_42", "MyApp.Handlers.OrderHandler")
        # -> "acme:corp_42:MyApp.Handlers.OrderHandler"
        compose_id("a/b", "c:d")                   # -> "a%2Fb:c%3Ad"
        compose_id("acme", "42", prefix="inbox:")  # -> "inbox:acme:42"

    A single term is encoded too. Raises ``TypeError`` without terms or for a term that is
    not a ``str`` (naming its position), :class:`~esmapper.errors.InvalidIdTermError` for a
    term holding an unpaired surrogate (``term_index`` tells which), and
    :class:`~esmapper.errors.IdTooLongError` when the encoded id, prefix included, exceeds
    :data:`MAX_ID_BYTES` bytes; the error names the longest term (``longest_term``, its
    0-based position; ``terms``, each term's encoded size). ``names`` optionally labels the
    terms in that message (e.g. the model's ``id_fields``). The id is never truncated.
    Empty terms are allowed (``compose_id("", "x") == ":x"``), but an empty id (one empty
    term, no prefix) raises ``ValueError``.
    """
    if not terms:
        raise TypeError("compose_id() needs at least one term")
    if names is not None and len(names) != len(terms):
        raise ValueError(f"compose_id() got {len(terms)} terms but {len(names)} names")
    try:
        joined = ":".join(terms)
    except TypeError:
        for position, term in enumerate(terms):
            if not isinstance(term, str):
                raise TypeError(
                    f"compose_id() term {position} must be a str, not {type(term).__name__}"
                ) from None
        raise
    encoded: Sequence[str]
    if _NOT_UNRESERVED_OR_COLON(joined) is None and joined.count(":") == len(terms) - 1:
        # Every term is made of unreserved characters only: nothing to escape.
        encoded = terms
        body = joined
    else:
        try:
            # quote(safe="") keeps exactly the RFC 3986 unreserved set ("~" included since
            # Python 3.7), encodes UTF-8 strictly and writes upper-case hex. Never use the
            # default safe="/": "/" would stay unescaped.
            encoded = [quote(term, safe="") for term in terms]
        except UnicodeEncodeError:
            for position, term in enumerate(terms):
                _check_term(term, position)
            raise
        body = ":".join(encoded)
    # The encoded body is ASCII, so its length is its size in bytes.
    size = len(body)
    if prefix:
        size += _prefix_bytes(prefix)
        body = prefix + body
    if size > MAX_ID_BYTES:
        raise _too_long(body, size, encoded, prefix, names)
    if not size:
        raise ValueError("compose_id() of a single empty term gives an empty id")
    return body


def _too_long(
    id: str,
    size: int,
    encoded: Sequence[str],
    prefix: str | None,
    names: Sequence[str] | None,
) -> IdTooLongError:
    sizes = [len(term) for term in encoded]
    longest = max(range(len(sizes)), key=sizes.__getitem__)
    label = f"{names[longest]}, " if names is not None else ""
    prefix_note = f", prefix {prefix!r} included" if prefix else ""
    return IdTooLongError(
        f"id is {size} bytes after encoding{prefix_note}, over Elasticsearch's "
        f"{MAX_ID_BYTES}-byte limit; shorten term {longest} ({label}{sizes[longest]} bytes "
        f"encoded). Ids are never truncated: two documents could then share one id",
        limit=MAX_ID_BYTES,
        actual=size,
        terms=sizes,
        longest_term=longest,
        ids=(id,),
    )


def decompose_id(id: str, prefix: str | None = None) -> tuple[str, ...]:
    """Split an id made by :func:`compose_id` back into its terms.

    ``prefix``, when given, must start the id (``ValueError`` otherwise) and is removed. The
    rest is split on ``:`` and each part percent-decoded as UTF-8. A ``%`` not followed by
    two hex digits, or escapes that do not decode as UTF-8, raise ``ValueError``. Decoding is
    lenient otherwise (lower-case hex and unescaped characters are accepted, as
    ``urllib.parse.unquote`` does), so a non-composed id decodes to a single term.

    Use it for display and debugging; a re-keying tool should recover terms from the
    document's own fields, not by parsing ids.
    """
    if not isinstance(id, str):
        raise TypeError(f"a document id must be a str, not {type(id).__name__}")
    if not id:
        raise ValueError("a document id must not be empty")
    if prefix:
        if not id.startswith(prefix):
            raise ValueError(f"id {_preview(id)} does not start with the prefix {prefix!r}")
        id = id[len(prefix) :]
    return tuple(_decode_term(part, position) for position, part in enumerate(id.split(":")))


def _decode_term(part: str, position: int) -> str:
    if "%" not in part:
        return part
    bad = _BAD_PERCENT(part)
    if bad is not None:
        raise ValueError(
            f"id term {position} {_preview(part)} has a malformed percent escape at "
            f"position {bad.start()} ('%' must be followed by two hex digits)"
        )
    try:
        return unquote_to_bytes(part).decode("utf-8")
    except UnicodeError as exc:  # invalid UTF-8 after unescaping, or a surrogate in part
        raise ValueError(
            f"id term {position} {_preview(part)} does not decode to UTF-8 text: {exc}"
        ) from None


# --------------------------------------------------------------------------- ObjectId

_OBJECT_ID_HEX: Final = re.compile(r"[0-9a-f]{24}").fullmatch
_MAX_SECONDS: Final = 0xFFFFFFFF
_COUNTER_MASK: Final = 0xFFFFFF


class _Generator:
    """Per-process state of ``ObjectId.new``: the random middle part and the counter."""

    __slots__ = ("counter", "lock", "random")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.random = 0
        self.counter = 0
        self.reseed()

    def reseed(self) -> None:
        # 40 random bits per process; the counter starts at random in the lower half of its
        # range, so it cannot wrap (and break ordering) before 2**23 ids.
        self.random = secrets.randbits(40) << 24
        self.counter = secrets.randbits(23)

    def after_fork(self) -> None:
        # The parent's lock may have been held at fork time by another thread.
        self.lock = threading.Lock()
        self.reseed()


_GENERATOR: Final = _Generator()
if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX
    os.register_at_fork(after_in_child=_GENERATOR.after_fork)


def _epoch_seconds(at: datetime) -> int:
    if not isinstance(at, datetime):
        raise TypeError(f"ObjectId.new(at=...) needs a datetime, not {type(at).__name__}")
    if at.tzinfo is None or at.utcoffset() is None:
        at = at.replace(tzinfo=timezone.utc)  # naive datetimes are taken as UTC
    seconds = int(at.timestamp() // 1)
    if not 0 <= seconds <= _MAX_SECONDS:
        raise ValueError(f"ObjectId time {at.isoformat()} is outside 1970-01-01 .. 2106-02-07")
    return seconds


@functools.total_ordering
class ObjectId:
    """A 12-byte, time-sortable id shown as 24 lowercase hex digits.

    Layout: 4-byte big-endian Unix time in seconds, 5 random bytes per process, 3-byte
    counter. ``ObjectId.new()`` makes one (``at=`` encodes a given time; naive datetimes are
    UTC); ``ObjectId(s)`` parses one (``ValueError`` unless ``s`` is exactly 24 lowercase
    hex digits: ids are compared as strings by Elasticsearch, so only the canonical
    spelling is accepted). ``str(oid)`` is the id to store; ``oid.created_at`` the encoded
    time (aware, UTC). ObjectIds compare and sort like their strings, which sort in
    creation order. An ObjectId never equals a ``str``.
    """

    __slots__ = ("_hex",)
    _hex: str

    def __init__(self, value: str | ObjectId) -> None:
        if isinstance(value, ObjectId):
            hex_ = value._hex
        elif isinstance(value, str) and _OBJECT_ID_HEX(value) is not None:
            hex_ = value
        else:
            raise ValueError(
                f"{value!r} is not an ObjectId: expected 24 lowercase hexadecimal digits"
            )
        object.__setattr__(self, "_hex", hex_)

    @classmethod
    def new(cls, at: datetime | None = None) -> ObjectId:
        """A fresh ObjectId for the current time, or for ``at`` (naive = UTC)."""
        seconds = int(time.time()) if at is None else _epoch_seconds(at)
        gen = _GENERATOR
        with gen.lock:
            counter = gen.counter
            gen.counter = (counter + 1) & _COUNTER_MASK
            value = (seconds << 64) | gen.random | counter
        oid = object.__new__(cls)
        object.__setattr__(oid, "_hex", f"{value:024x}")
        return oid

    @staticmethod
    def is_valid(value: object) -> bool:
        """Whether ``value`` is a str of exactly 24 lowercase hex digits."""
        return isinstance(value, str) and _OBJECT_ID_HEX(value) is not None

    @property
    def created_at(self) -> datetime:
        """The time encoded in the id (whole seconds), as an aware UTC datetime."""
        return datetime.fromtimestamp(int(self._hex[:8], 16), tz=timezone.utc)

    @property
    def binary(self) -> bytes:
        """The 12 raw bytes."""
        return bytes.fromhex(self._hex)

    def __str__(self) -> str:
        return self._hex

    def __repr__(self) -> str:
        return f"ObjectId({self._hex!r})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("ObjectId is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("ObjectId is immutable")

    def __reduce__(self) -> tuple[type[ObjectId], tuple[str]]:
        return (ObjectId, (self._hex,))

    def __hash__(self) -> int:
        return hash(self._hex)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ObjectId):
            return self._hex == other._hex
        return NotImplemented

    def __lt__(self, other: object) -> bool:
        if isinstance(other, ObjectId):
            return self._hex < other._hex
        return NotImplemented
