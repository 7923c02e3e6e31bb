"""A script patch's Painless error as Elasticsearch answers it becomes one
:class:`~esmapper.errors.ScriptError` naming the script's line and position (issue 29,
item 12): the answer of a real cluster (a ``script_exception`` at the top of a refused
``_update_by_query``, or the cause of a bulk item's ``illegal_argument_exception``) and of
the local test server (no position, the script as JSON)."""

from __future__ import annotations

import pickle
from typing import Any

import esmapper as em
from esmapper.errors import ScriptError

SCRIPT = "ctx._source.a = 1;\nctx._source.n = ;"
OFFSET = SCRIPT.index(";", SCRIPT.index("n ="))  # the ';' of line 2

#: the ``script_exception`` of a compile error, as a real cluster answers it
COMPILE: dict[str, Any] = {
    "type": "script_exception",
    "reason": "compile error",
    "script_stack": ["... ctx._source.n = ;", "                    ^---- HERE"],
    "script": SCRIPT,
    "lang": "painless",
    "position": {"offset": OFFSET, "start": OFFSET - 16, "end": OFFSET + 1},
    "caused_by": {
        "type": "illegal_argument_exception",
        "reason": "invalid sequence of tokens near [';'].",
    },
}
#: a refused ``_update_by_query``'s ``error`` (status 400)
REFUSED = {"root_cause": [{k: v for k, v in COMPILE.items() if k != "caused_by"}], **COMPILE}
#: a bulk update item's ``error``
ITEM = {
    "type": "illegal_argument_exception",
    "reason": "failed to execute script",
    "caused_by": COMPILE,
}


def test_a_refused_update_by_query_says_the_line_and_position() -> None:
    error = ScriptError.of_answer(REFUSED, call="patch_all on Note", index="notes")
    assert error is not None
    assert isinstance(error, em.DocumentError) and isinstance(error, ValueError)
    assert (error.error_type, error.reason, error.index) == (
        "script_exception",
        "compile error",
        "notes",
    )
    assert (error.script, error.lang, error.position) == (SCRIPT, "painless", OFFSET)
    assert (error.line, error.column) == (2, len("ctx._source.n = ;"))
    assert error.cause == "invalid sequence of tokens near [';']."
    assert error.script_stack == COMPILE["script_stack"]
    assert str(error).splitlines() == [
        "patch_all on Note: the painless script does not compile: "
        "invalid sequence of tokens near [';'].",
        "at line 2, column 17:",
        "    ctx._source.n = ;",
        "                    ^",
    ]


def test_a_bulk_items_cause_is_found_and_the_sent_script_wins() -> None:
    sent = "ctx._source.a = 1;\nctx._source.n = ;\nctx._source.updated_utc = params.__esm_now;"
    error = ScriptError.of_answer(ITEM, call="update of 'n1'", script=sent, ids=["n1"])
    assert error is not None and error.ids == ("n1",)
    assert error.script == sent and (error.line, error.column) == (2, 17)
    assert "update of 'n1': the painless script does not compile" in str(error)


def test_without_a_position_the_servers_excerpt_is_quoted() -> None:
    error = ScriptError.of_answer({**COMPILE, "position": None, "script": None}, call="c")
    assert error is not None and error.position is None and error.line is None
    assert str(error).splitlines()[1:] == [f"    {row}" for row in COMPILE["script_stack"]]


def test_the_local_servers_answer() -> None:
    local = {
        "root_cause": [
            {"type": "illegal_argument_exception", "reason": "failed to execute script"}
        ],
        "type": "illegal_argument_exception",
        "reason": "failed to execute script",
        "caused_by": {
            "type": "script_exception",
            "reason": "runtime error",
            "caused_by": {"type": "null_pointer_exception", "reason": "value is null"},
            "lang": "painless",
            "script": '{"lang":"painless","params":{},"source":"ctx._source.n = params.x.y;"}',
            "script_stack": [],
        },
    }
    error = ScriptError.of_answer(local, call="update of 'n1'")
    assert error is not None
    assert error.script == "ctx._source.n = params.x.y;"
    assert str(error) == "update of 'n1': the painless script failed while running: value is null"


def test_other_errors_are_not_script_errors() -> None:
    assert (
        ScriptError.of_answer({"type": "mapper_parsing_exception", "reason": "x"}, call="c") is None
    )
    assert ScriptError.of_answer(None, call="c") is None
    assert ScriptError.of_answer("a string", call="c") is None


def test_a_position_outside_the_script_is_not_used() -> None:
    error = ScriptError.of_answer(
        {**COMPILE, "position": {"offset": 999}}, call="c", script="x = ;"
    )
    assert error is not None and error.position is None


def test_it_pickles_with_its_message() -> None:
    error = ScriptError.of_answer(REFUSED, call="patch_all on Note")
    assert error is not None
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error) and copy.position == OFFSET and copy.line == 2


def test_an_error_at_the_end_of_a_script_ending_with_a_newline() -> None:
    """Painless places "unexpected end of script" at the end (offset = the length): after
    a final newline, that is an empty last line, shown as such (it raised IndexError)."""
    script = "if (ctx._source.n > 1) {\n"
    at_end = {**COMPILE, "script": script, "position": {"offset": len(script)}}
    error = ScriptError.of_answer(at_end, call="patch_all on Employee", script=script)
    assert error is not None
    assert (error.line, error.column) == (2, 1)
    assert str(error).splitlines()[-3:] == ["at line 2, column 1:", "    ", "    ^"]


def test_the_line_shown_is_the_line_counted() -> None:
    """Lines are counted at ``\\n``: the line shown is that one, whatever other line
    breaks ``str.splitlines`` would also split at (a form feed, U+2028)."""
    script = "ctx._source.a = 1;\fctx._source.b = ;\nctx._source.c = 2;"
    offset = script.index("= ;") + 2
    error = ScriptError.of_answer(
        {**COMPILE, "script": script, "position": {"offset": offset}}, call="c", script=script
    )
    assert error is not None and (error.line, error.column) == (1, offset + 1)
    shown, caret = str(error).split("\n")[-2:]
    assert shown == "    ctx._source.a = 1;\fctx._source.b = ;"
    assert caret.index("^") == 4 + offset
