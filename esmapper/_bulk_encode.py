"""The NDJSON lines of bulk actions, and their cut into requests (for :mod:`esmapper.bulk`).

:func:`encode_all` turns every action of one write into its lines (an action line such as
``{"index":{"_index":"employees","_id":"1","if_seq_no":3,"if_primary_term":1}}`` and,
except for ``delete``, a source line) exactly once, before the first request: an action
that cannot be serialized or is invalid raises ``TypeError``/``ValueError`` naming its
position, and nothing is sent. A plain write (an id, maybe a version condition; no
routing, pipeline or ``retry_on_conflict``) is the cached ``{"<op>":{"_index":"<index>",
"_id":`` prefix, its id, condition and source; every other action is built as a dict and
encoded: both give the same bytes. An action's ``source`` (the body's JSON bytes, already
encoded by the write pipeline) is sent as it is, in place of encoding ``body``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from esmapper import _json

if TYPE_CHECKING:
    from esmapper.bulk import BulkAction

__all__ = ["chunks", "encode", "encode_all", "encode_general"]


#: The ops of ``esmapper.bulk.BulkOp``.
_OPS: frozenset[str] = frozenset({"index", "create", "delete", "update"})
#: Ops whose action line may take the cached-prefix path.
_PLAIN_OPS: frozenset[str] = frozenset({"index", "create", "update"})

#: ``{"<op>":{"_index":"<index>","_id":`` per (op, index). Bounded: cleared when it grows
#: past _HEAD_PREFIXES_MAX entries.
_head_prefixes: dict[tuple[str, str], bytes] = {}
_HEAD_PREFIXES_MAX = 256
_HEAD_ENDS = {False: b"}}\n", True: b',"require_alias":true}}\n'}
_NEWLINE = b"\n"


def _head_prefix(op: str, index: str) -> bytes:
    prefix = _head_prefixes.get((op, index))
    if prefix is None:
        if len(_head_prefixes) >= _HEAD_PREFIXES_MAX:
            _head_prefixes.clear()
        # '{"op":{"_index":"..."}}' -> '{"op":{"_index":"...","_id":'
        prefix = _json.dumps({op: {"_index": index}})[:-2] + b',"_id":'
        _head_prefixes[op, index] = prefix
    return prefix


def _unserializable(position: int, action: BulkAction, error: Exception) -> TypeError:
    return TypeError(
        f"bulk action {position} ({action.op} {action.index}/{action.id}): "
        f"body is not JSON serializable: {error}"
    )


def encode_all(actions: Sequence[BulkAction], start: int = 0) -> list[bytes]:
    """The NDJSON lines (with trailing newlines) of each action, in order; ``start`` is the
    position of the first (for error messages). Raises ``ValueError``/``TypeError`` for the
    first invalid action. One loop for the batch: the (op, index, require_alias) heads are
    looked up once per call, not per action."""
    out: list[bytes] = []
    append = out.append
    dumps = _json.dumps
    join = b"".join
    heads: dict[tuple[str, str, bool], tuple[bytes, bytes]] = {}
    # the previous plain action's op, index, require_alias and head (a batch is usually
    # one op to one index: no key per action)
    last: tuple[Any, Any, Any] = (None, None, None)
    head = (b"", b"")
    position = start - 1
    for action in actions:
        position += 1
        body, source, doc_id, index = action._body, action.source, action.id, action.index
        seq_no, term = action.if_seq_no, action.if_primary_term
        if (
            type(doc_id) is not str
            or (body is None and source is None)
            or type(index) is not str
            or action.routing is not None
            or action.pipeline is not None
            or action.retry_on_conflict is not None
        ):
            append(encode_general(position, action))
            continue
        op, alias = action.op, action.require_alias
        if op is not last[0] or index is not last[1] or alias is not last[2]:
            key = (op, index, bool(alias))
            found = heads.get(key)
            if found is None:
                if op not in _PLAIN_OPS or not index:
                    append(encode_general(position, action))
                    last = (None, None, None)
                    continue
                found = heads[key] = (_head_prefix(op, index), _HEAD_ENDS[key[2]])
            head, last = found, (op, index, alias)
        if source is None:
            try:
                source = dumps(body)
            except (TypeError, ValueError) as e:
                raise _unserializable(position, action, e) from e
        if seq_no is None and term is None:
            append(join((head[0], dumps(doc_id), head[1], source, _NEWLINE)))
        elif type(seq_no) is int and type(term) is int:
            append(
                join(
                    (
                        head[0],
                        dumps(doc_id),
                        b',"if_seq_no":%d,"if_primary_term":%d' % (seq_no, term),
                        head[1],
                        source,
                        _NEWLINE,
                    )
                )
            )
        else:
            append(encode_general(position, action))
    return out


def encode(position: int, action: BulkAction) -> bytes:
    """The NDJSON lines of one action (see :func:`encode_all`)."""
    return encode_all((action,), position)[0]


def encode_general(position: int, action: BulkAction) -> bytes:
    """The lines of any action, built as a dict; raises on invalid actions."""
    op = action.op
    if op not in _OPS:
        raise ValueError(f"bulk action {position}: unknown op {op!r}")
    if not isinstance(action.index, str) or not action.index:
        raise ValueError(f"bulk action {position}: index must be a non-empty string")
    meta: dict[str, Any] = {"_index": action.index}
    if action.id is not None:
        meta["_id"] = action.id
    elif op in ("update", "delete"):
        raise ValueError(f"bulk action {position}: {op} needs an id")
    if action.routing is not None:
        meta["routing"] = action.routing
    if action.if_seq_no is not None or action.if_primary_term is not None:
        if action.if_seq_no is None or action.if_primary_term is None:
            raise ValueError(
                f"bulk action {position} ({action.id!r}): if_seq_no and if_primary_term "
                "must be given together"
            )
        meta["if_seq_no"] = action.if_seq_no
        meta["if_primary_term"] = action.if_primary_term
    if action.require_alias:
        if op == "delete":
            raise ValueError(f"bulk action {position}: require_alias is not for delete")
        meta["require_alias"] = True
    if action.pipeline is not None:
        if op not in ("index", "create"):
            raise ValueError(f"bulk action {position}: pipeline is only for index and create")
        meta["pipeline"] = action.pipeline
    if action.retry_on_conflict is not None:
        if op != "update":
            raise ValueError(f"bulk action {position}: retry_on_conflict is only for update")
        meta["retry_on_conflict"] = action.retry_on_conflict
    head = _json.dumps({op: meta})
    held, body = action._body, action.source
    if op == "delete":
        if held is not None or body is not None:
            raise ValueError(f"bulk action {position}: delete takes no body")
        return head + b"\n"
    if body is None:
        if held is None:
            raise ValueError(f"bulk action {position} ({action.id!r}): {op} needs a body")
        try:
            body = _json.dumps(held)
        except (TypeError, ValueError) as e:
            raise _unserializable(position, action, e) from e
    return b"%b\n%b\n" % (head, body)


def chunks(blobs: Sequence[bytes], chunk_size: int, max_bytes: int) -> list[list[int]]:
    """Positions of ``blobs`` cut into runs of at most ``chunk_size`` items and
    ``max_bytes`` bytes; an item larger than ``max_bytes`` forms a run of its own."""
    n = len(blobs)
    if sum(map(len, blobs)) <= max_bytes:  # the common case: only chunk_size cuts
        return [list(range(k, min(k + chunk_size, n))) for k in range(0, n, chunk_size)]
    runs: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i, blob in enumerate(blobs):
        n = len(blob)
        if current and (len(current) >= chunk_size or size + n > max_bytes):
            runs.append(current)
            current, size = [], 0
        current.append(i)
        size += n
    if current:
        runs.append(current)
    return runs
