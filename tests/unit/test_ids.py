"""esmapper.ids: the id format (pinned), its properties, the 512-byte limit, ObjectId."""

from __future__ import annotations

import os
import pickle
import re
import threading
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import quote

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from esmapper.errors import EsmapperError, IdTooLongError, InvalidIdTermError
from esmapper.ids import MAX_ID_BYTES, ObjectId, check_id, compose_id, decompose_id

# --------------------------------------------------------------------------- golden table
# The exact ids.  Changing any row changes the id of stored documents: that needs a
# re-key migration, not an edit of this table.

GOLDEN = [
    # (terms, prefix, expected id)
    (
        ("acme", "corp_42", "MyApp.Handlers.OrderHandler"),
        None,
        "acme:corp_42:MyApp.Handlers.OrderHandler",
    ),
    (
        ("acme_corp", "42", "MyApp.Handlers.OrderHandler"),
        None,
        "acme_corp:42:MyApp.Handlers.OrderHandler",
    ),
    (("a/b", "c:d"), None, "a%2Fb:c%3Ad"),
    (("acme", "42"), "inbox:", "inbox:acme:42"),
    (("acme", "corp_42", "H"), "inbox:", "inbox:acme:corp_42:H"),
    (("__untenanted__", "m-1", "H"), "inbox:", "inbox:__untenanted__:m-1:H"),
    (("100%",), None, "100%25"),
    (("shoes/red",), None, "shoes%2Fred"),
    (("shoes%2Fred",), None, "shoes%252Fred"),
    (("o-1", "shoes^2Fred"), None, "o-1:shoes%5E2Fred"),
    (("hello world",), None, "hello%20world"),
    (("é",), None, "%C3%A9"),
    (("café", "naïve"), None, "caf%C3%A9:na%C3%AFve"),
    (("a~b", "x-y.z_w"), None, "a~b:x-y.z_w"),
    (("😀",), None, "%F0%9F%98%80"),
    (("日本",), None, "%E6%97%A5%E6%9C%AC"),
    (("x",), None, "x"),
    (("a b",), None, "a%20b"),  # a single term is encoded too
    (("", "x"), None, ":x"),
    (("x", ""), None, "x:"),
    (("a+b=c&d?e#f",), None, "a%2Bb%3Dc%26d%3Fe%23f"),
    (("!*'()",), None, "%21%2A%27%28%29"),
    (("back\\slash", "pipe|"), None, "back%5Cslash:pipe%7C"),
    (("line\nbreak", "nul\x00"), None, "line%0Abreak:nul%00"),
    (("List<Dictionary<string, int>>",), None, "List%3CDictionary%3Cstring%2C%20int%3E%3E"),
    (("2026/09/hello",), None, "2026%2F09%2Fhello"),
    (("ABCxyz019",), None, "ABCxyz019"),
]


@pytest.mark.parametrize(("terms", "prefix", "expected"), GOLDEN)
def test_golden_format(terms: tuple[str, ...], prefix: str | None, expected: str) -> None:
    assert compose_id(*terms, prefix=prefix) == expected
    assert decompose_id(expected, prefix=prefix) == terms


def test_api_examples() -> None:
    assert compose_id("acme", "corp_42", "MyApp.Handlers.OrderHandler") == (
        "acme:corp_42:MyApp.Handlers.OrderHandler"
    )
    assert compose_id("a/b", "c:d") == "a%2Fb:c%3Ad"
    assert compose_id("acme", "42", prefix="inbox:") == "inbox:acme:42"
    assert decompose_id("a%2Fb:c%3Ad") == ("a/b", "c:d")


def test_cosmos_regression_escape_is_escaped() -> None:
    # EF escaped "/" as "^2F" but not "^": "shoes/red" and "shoes^2Fred" collided.
    assert compose_id("o-1", "shoes/red") != compose_id("o-1", "shoes%2Fred")
    assert compose_id("o-1", "shoes/red") != compose_id("o-1", "shoes^2Fred")


def test_inbox_ambiguity_resolved() -> None:
    # "_".join gave acme_corp_42_H for both, and the second message was dropped.
    assert compose_id("acme", "corp_42", "H") != compose_id("acme_corp", "42", "H")
    assert compose_id("a:b", "c") != compose_id("a", "b:c")
    assert compose_id("a", "b") != compose_id("a:b")


def test_hex_is_upper_case_and_slash_is_escaped() -> None:
    # urllib.parse.quote's default safe="/" would keep "/"; .NET writes upper-case hex.
    assert compose_id("/") == "%2F"
    assert compose_id("\xff") == "%C3%BF"


def test_prefix_is_not_escaped_and_empty_prefix_is_none() -> None:
    assert compose_id("a", prefix="p/q:") == "p/q:a"
    assert compose_id("a", prefix="") == "a"


# --------------------------------------------------------------------------- properties

# Any text Python can encode as UTF-8, i.e. without surrogate code points.
_text = st.text(st.characters(codec="utf-8"), max_size=8)
# Text made of the characters that matter for collisions (separators and escapes).
_tricky = st.text(st.sampled_from(list(":%_/2Fa^ é")), max_size=6)
_terms = st.lists(_text | _tricky, min_size=1, max_size=5).filter(lambda t: t != [""])

_ENCODED = re.compile(r"(?:[A-Za-z0-9._~:-]|%[0-9A-F]{2})+")


@settings(max_examples=300, deadline=None)
@given(_terms)
def test_round_trip(terms: list[str]) -> None:
    assert decompose_id(compose_id(*terms)) == tuple(terms)


@settings(max_examples=100, deadline=None)
@given(_terms, st.sampled_from(["inbox:", "p-", "é:"]))
def test_round_trip_with_prefix(terms: list[str], prefix: str) -> None:
    id_ = compose_id(*terms, prefix=prefix)
    assert id_.startswith(prefix)
    assert decompose_id(id_, prefix=prefix) == tuple(terms)


@settings(max_examples=300, deadline=None)
@given(_terms, _terms)
def test_injective(a: list[str], b: list[str]) -> None:
    assume(a != b)
    assert compose_id(*a) != compose_id(*b)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(_tricky, min_size=1, max_size=3), max_size=30))
def test_injective_over_sets(tuples: list[list[str]]) -> None:
    distinct = {tuple(t) for t in tuples if t != [""]}
    assert len({compose_id(*t) for t in distinct}) == len(distinct)


@settings(max_examples=300, deadline=None)
@given(_terms)
def test_encoded_alphabet_and_reference(terms: list[str]) -> None:
    id_ = compose_id(*terms)
    assert _ENCODED.fullmatch(id_), id_
    # Same as the obvious reference implementation (with safe="" -- not the default "/").
    assert id_ == ":".join(quote(t, safe="") for t in terms)
    assert id_.count(":") == len(terms) - 1
    assert check_id(id_) == id_


# --------------------------------------------------------------------------- 512 bytes


def test_max_id_bytes() -> None:
    assert MAX_ID_BYTES == 512


@pytest.mark.parametrize(
    ("terms", "prefix", "size"),
    [
        (("a" * 512,), None, 512),
        (("a" * 255, "b" * 256), None, 512),
        (("a" * 506,), "inbox:", 512),
        (("a" * 509,), "é:", 512),  # a non-ASCII prefix counts in bytes (3 here)
        (("é" * 85, "a"), None, 512),  # 85 * 6 + 1 + 1
        (("😀" * 42, "abcdefg"), None, 512),  # 42 * 12 + 1 + 7
    ],
)
def test_exactly_512_bytes_accepted(terms: tuple[str, ...], prefix: str | None, size: int) -> None:
    id_ = compose_id(*terms, prefix=prefix)
    assert len(id_.encode("utf-8")) == size == MAX_ID_BYTES


def test_multibyte_counted_in_bytes_after_encoding() -> None:
    # "é" is 2 UTF-8 bytes, each escaped as 3 characters: 6 bytes per "é".
    assert len(compose_id("é" * 85, "a")) == 85 * 6 + 2  # 512
    with pytest.raises(IdTooLongError) as info:
        compose_id("é" * 85, "ab")
    assert info.value.actual == 513
    # 170 "é" are only 340 bytes of UTF-8 but 1020 once encoded.
    with pytest.raises(IdTooLongError) as info:
        compose_id("é" * 170)
    assert info.value.actual == 170 * 6
    assert info.value.terms == (1020,)
    # A 4-byte character encodes to 12 bytes.
    assert len(compose_id("😀" * 42, "abcdefg")) == 42 * 12 + 8
    with pytest.raises(IdTooLongError):
        compose_id("😀" * 43)


@pytest.mark.parametrize(
    ("terms", "prefix"),
    [
        (("a" * 513,), None),
        (("a" * 256, "b" * 256), None),
        (("a" * 507,), "inbox:"),
        (("a" * 510,), "é:"),
    ],
)
def test_513_bytes_refused(terms: tuple[str, ...], prefix: str | None) -> None:
    with pytest.raises(IdTooLongError) as info:
        compose_id(*terms, prefix=prefix)
    err = info.value
    assert err.limit == 512
    assert err.actual == 513
    assert isinstance(err, ValueError)
    assert isinstance(err, EsmapperError)


def test_too_long_error_names_limit_size_and_longest_term() -> None:
    guid = "b3a1c7e2-4d5f-4a8b-9c0d-1e2f3a4b5c6d"
    core = (
        "System.Private.CoreLib, Version=8.0.0.0, Culture=neutral, PublicKeyToken=7cec85d7bea7798e"
    )
    handler = (
        f"System.Collections.Generic.Dictionary`2[[System.String, {core}],"
        f"[System.Collections.Generic.List`1[[System.String, {core}]], {core}]], {core}"
    )
    with pytest.raises(IdTooLongError) as info:
        compose_id(guid, guid, handler, names=("tenant", "message_id", "handler_type"))
    err = info.value
    encoded_handler = len(quote(handler, safe=""))
    assert err.limit == 512
    assert err.actual == 36 + 1 + 36 + 1 + encoded_handler
    assert err.terms == (36, 36, encoded_handler)
    assert err.longest_term == 2
    message = str(err)
    assert f"id is {err.actual} bytes after encoding" in message
    assert "512-byte limit" in message
    assert f"shorten term 2 (handler_type, {encoded_handler} bytes encoded)" in message
    assert "never truncated" in message
    # The full (too long) id is carried, not a truncated one.
    assert err.ids == (f"{guid}:{guid}:{quote(handler, safe='')}",)


def test_too_long_error_without_names_and_with_prefix() -> None:
    with pytest.raises(IdTooLongError) as info:
        compose_id("short", "x" * 600, "y", prefix="inbox:")
    err = info.value
    assert err.actual == 6 + 5 + 1 + 600 + 1 + 1
    assert err.longest_term == 1
    assert err.terms == (5, 600, 1)
    assert "shorten term 1 (600 bytes encoded)" in str(err)
    assert "'inbox:'" in str(err)


# --------------------------------------------------------------------------- surrogates


@pytest.mark.parametrize(
    "bad",
    [
        "\ud800",  # high surrogate alone
        "abc\udbff",  # high surrogate at the end (string cut mid-character)
        "\udc00xyz",  # low surrogate alone
        "\udc00\ud800",  # reversed pair
        "\ud83d\ude00",  # a pair as two code points: still not text a str can encode
    ],
)
@pytest.mark.parametrize("position", [0, 1, 2])
def test_unpaired_surrogate_refused(bad: str, position: int) -> None:
    terms = ["tenant", "message", "handler"]
    terms[position] = bad
    with pytest.raises(InvalidIdTermError) as info:
        compose_id(*terms)
    err = info.value
    assert err.term_index == position
    assert isinstance(err, ValueError)
    assert "mid-character" in str(err)
    assert f"term {position}" in str(err)
    assert "position" in str(err)


def test_surrogate_in_prefix_refused() -> None:
    with pytest.raises(InvalidIdTermError) as info:
        compose_id("a", prefix="\ud800:")
    assert info.value.term_index is None


def test_astral_character_accepted() -> None:
    assert compose_id("😀", "𝄞") == "%F0%9F%98%80:%F0%9D%84%9E"
    assert decompose_id("%F0%9F%98%80:%F0%9D%84%9E") == ("😀", "𝄞")


# --------------------------------------------------------------------------- argument errors


def test_type_errors() -> None:
    with pytest.raises(TypeError, match="at least one term"):
        compose_id()
    with pytest.raises(TypeError, match=r"term 1 must be a str, not int"):
        compose_id("a", 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"term 0 must be a str, not NoneType"):
        compose_id(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"term 2 must be a str, not bytes"):
        compose_id("a", "b", b"c")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="prefix"):
        compose_id("a", prefix=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="names"):
        compose_id("a", "b", names=("only_one",))


def test_empty_id_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        compose_id("")
    assert compose_id("", prefix="inbox:") == "inbox:"
    assert decompose_id("inbox:", prefix="inbox:") == ("",)


def test_str_subclass_terms() -> None:
    class Tenant(str):
        pass

    assert compose_id(Tenant("a b"), "c") == "a%20b:c"


# --------------------------------------------------------------------------- decompose_id


def test_decompose_prefix_required() -> None:
    with pytest.raises(ValueError, match="prefix"):
        decompose_id("acme:42", prefix="inbox:")


@pytest.mark.parametrize("bad", ["%", "a%", "a%4", "%G1", "a:%zz", "100%:x"])
def test_decompose_malformed_percent(bad: str) -> None:
    with pytest.raises(ValueError, match="malformed percent escape"):
        decompose_id(bad)


@pytest.mark.parametrize("bad", ["%FF", "%C3", "%ED%A0%80"])  # invalid UTF-8, encoded surrogate
def test_decompose_invalid_utf8(bad: str) -> None:
    with pytest.raises(ValueError, match="UTF-8"):
        decompose_id(bad)


def test_decompose_lenient_otherwise() -> None:
    assert decompose_id("a%2fb") == ("a/b",)
    assert decompose_id("acme_corp_42_H") == ("acme_corp_42_H",)  # a legacy id: one term
    assert decompose_id("é/x") == ("é/x",)
    with pytest.raises(ValueError, match="empty"):
        decompose_id("")
    with pytest.raises(TypeError):
        decompose_id(42)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- check_id


def test_check_id_plain_ids_verbatim() -> None:
    for id_ in ["a/b:c%", "a b", "Ünïcödé", "😀", "_x", "a" * 512]:
        assert check_id(id_) is id_
    assert check_id("é" * 256) == "é" * 256  # 512 bytes of UTF-8
    assert check_id("😀" * 128) == "😀" * 128  # 512 bytes


@pytest.mark.parametrize("too_long", ["a" * 513, "é" * 256 + "a", "😀" * 128 + "a", "a" * 10_000])
def test_check_id_too_long(too_long: str) -> None:
    with pytest.raises(IdTooLongError) as info:
        check_id(too_long, index="orders")
    err = info.value
    size = len(too_long.encode("utf-8"))
    assert err.limit == 512
    assert err.actual == size
    assert err.index == "orders"
    assert err.ids == (too_long,)
    assert f"id is {size} bytes" in str(err)
    assert "512-byte limit" in str(err)
    assert len(str(err)) < 300  # the message shows a preview, the error keeps the full id


def test_check_id_refusals() -> None:
    with pytest.raises(ValueError, match="empty"):
        check_id("")
    with pytest.raises(TypeError):
        check_id(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        check_id(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidIdTermError, match=r"U\+D83D at position 3.*mid-character"):
        check_id("abc\ud83d")
    with pytest.raises(InvalidIdTermError) as info:
        check_id("\udc00", index="orders")
    assert info.value.term_index is None
    assert info.value.index == "orders"


# --------------------------------------------------------------------------- ObjectId

_HEX24 = re.compile(r"[0-9a-f]{24}")


def test_object_id_format() -> None:
    oid = ObjectId.new()
    s = str(oid)
    assert _HEX24.fullmatch(s)
    assert ObjectId.is_valid(s)
    assert ObjectId(s) == oid
    assert hash(ObjectId(s)) == hash(oid)
    assert repr(oid) == f"ObjectId('{s}')"
    assert len(oid.binary) == 12
    assert oid.binary.hex() == s
    assert ObjectId(oid) == oid
    assert check_id(s) == s


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "0" * 23,
        "0" * 25,
        "0" * 23 + "g",
        "ABCDEF0123456789ABCDEF01",  # upper case: ES compares ids as strings
        "0" * 24 + "\n",
        " " + "0" * 23,
        "\uff10" * 24,  # full-width digits
        42,
        None,
        b"0" * 24,
    ],
)
def test_object_id_parse_rejects(bad: object) -> None:
    assert not ObjectId.is_valid(bad)
    with pytest.raises(ValueError, match="not an ObjectId"):
        ObjectId(bad)  # type: ignore[arg-type]


def test_object_id_layout_and_created_at() -> None:
    before = int(time.time())
    oid = ObjectId.new()
    after = int(time.time())
    seconds = int(str(oid)[:8], 16)
    assert before <= seconds <= after
    created = oid.created_at
    assert created.tzinfo is not None
    assert created.utcoffset() == timedelta(0)
    assert created == datetime.fromtimestamp(seconds, tz=timezone.utc)
    # The 5 random bytes are the same for every id of the process.
    assert str(ObjectId.new())[8:18] == str(oid)[8:18]
    assert ObjectId("000000010000000000000000").created_at == datetime(
        1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc
    )


def test_object_id_at() -> None:
    aware = datetime(2024, 3, 1, 12, 30, 45, 999_000, tzinfo=timezone(timedelta(hours=2)))
    oid = ObjectId.new(at=aware)
    assert oid.created_at == aware.replace(microsecond=0)
    assert str(oid)[:8] == f"{int(aware.timestamp()):08x}"
    naive = datetime(2024, 3, 1, 12, 30, 45)  # treated as UTC
    assert ObjectId.new(at=naive).created_at == naive.replace(tzinfo=timezone.utc)
    # Ids for the same date still differ and sort in creation order.
    first, second = ObjectId.new(at=naive), ObjectId.new(at=naive)
    assert first < second
    # Dates sort: an id for an earlier date sorts first, whatever the generation order.
    assert ObjectId.new(at=naive + timedelta(seconds=1)) > ObjectId.new(at=naive)
    with pytest.raises(ValueError):
        ObjectId.new(at=datetime(1969, 12, 31, tzinfo=timezone.utc))
    with pytest.raises(ValueError):
        ObjectId.new(at=datetime(2107, 1, 1, tzinfo=timezone.utc))
    with pytest.raises(TypeError):
        ObjectId.new(at="2024-01-01")  # type: ignore[arg-type]


def test_object_id_sorted_in_creation_order() -> None:
    ids = [ObjectId.new() for _ in range(10_000)]
    strings = [str(oid) for oid in ids]
    assert len(set(strings)) == len(strings)
    assert strings == sorted(strings)
    assert ids == sorted(ids)


def test_object_id_thread_safe() -> None:
    per_thread = 10_000
    results: list[list[str]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def work() -> None:
        barrier.wait()
        mine = [str(ObjectId.new()) for _ in range(per_thread)]
        with lock:
            results.append(mine)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8
    everything = [s for mine in results for s in mine]
    assert len(set(everything)) == 8 * per_thread
    for mine in results:  # each thread sees its own ids in order
        assert mine == sorted(mine)


def test_object_id_comparisons() -> None:
    a = ObjectId("000000000000000000000001")
    b = ObjectId("000000000000000000000002")
    assert a < b
    assert a <= b
    assert b > a
    assert b >= a
    assert a != b
    assert a == ObjectId(str(a))
    assert a != str(a)  # an ObjectId never equals a str
    assert {a, ObjectId(str(a)), b} == {a, b}
    with pytest.raises(TypeError):
        _ = a < "000000000000000000000002"


def test_object_id_slots_immutable_picklable() -> None:
    oid = ObjectId.new()
    assert not hasattr(oid, "__dict__")
    with pytest.raises(AttributeError):
        oid._hex = "0" * 24
    with pytest.raises(AttributeError):
        oid.other = 1
    assert pickle.loads(pickle.dumps(oid)) == oid


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_object_id_reseeded_after_fork() -> None:
    parent = str(ObjectId.new())
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.write(write_end, str(ObjectId.new()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    child = os.read(read_end, 100).decode()
    os.close(read_end)
    os.waitpid(pid, 0)
    assert ObjectId.is_valid(child)
    assert child[8:18] != parent[8:18]  # a fresh random part in the child
