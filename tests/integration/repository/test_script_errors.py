"""A script patch whose Painless script does not compile raises esmapper's
:class:`~esmapper.errors.ScriptError` with the script's line and position, on every path
(issue 29, item 12; it came through as the client's raw ``BadRequestError`` from
``patch_all``): the local server's answers, and a real cluster's refused
``_update_by_query`` (scripted through the proxy)."""

from __future__ import annotations

import pytest
from elasticsearch import BadRequestError

import esmapper as em
from esmapper.testing.cluster import ClusterProxy
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper

from .models import Message

BAD = "ctx._source.body = 'x';\nctx._source.body = ;"


@pytest.fixture
def stored(messages: em.Repository[Message]) -> Message:
    return messages.add(Message(tenant="t", message_id="m", handler_type="h", body="hello"),
                        consistency="wait")  # fmt: skip


@pytest.mark.parametrize("path", ["patch by id", "patch by ids", "patch_all"])
def test_a_script_that_does_not_compile(
    messages: em.Repository[Message], stored: Message, path: str
) -> None:
    patch = em.ScriptPatch(BAD)
    with pytest.raises(em.ScriptError) as raised:
        if path == "patch by id":
            messages.patch(stored.id, patch)  # type: ignore[arg-type]
        elif path == "patch by ids":
            messages.patch([stored.id], patch)  # type: ignore[list-item]
        else:
            messages.patch_all(None, patch)
    error = raised.value
    assert isinstance(error, em.DocumentError)
    assert (error.error_type, error.reason) == ("script_exception", "compile error")
    assert "the painless script does not compile" in str(error)
    assert error.script is not None and "ctx._source.body = ;" in error.script
    assert error.cause  # the server's explanation
    current = messages.get(stored.id, cache=False)  # nothing was written
    assert current is not None and current.body == "hello"


def test_a_real_clusters_refused_update_by_query(
    make_mapper: MakeMapper, proxy: FaultProxy
) -> None:
    mapper = make_mapper(Message, url=proxy.url, configure=True)
    repo = mapper.repository(Message)
    repo.add(Message(tenant="t", message_id="m", handler_type="h"), consistency="wait")
    offset = BAD.index(";", BAD.index("= ;"))
    cause = {
        "type": "script_exception",
        "reason": "compile error",
        "script_stack": ["... ctx._source.body = ;", "                        ^---- HERE"],
        "script": BAD,
        "lang": "painless",
        "position": {"offset": offset, "start": offset - 20, "end": offset + 1},
    }
    answer = {
        "error": {
            "root_cause": [cause],
            **cause,
            "caused_by": {
                "type": "illegal_argument_exception",
                "reason": "invalid sequence of tokens near [';'].",
            },
        },
        "status": 400,
    }
    proxy.reply_status(400, path=r"/_update_by_query$", body=answer)
    with pytest.raises(em.ScriptError) as raised:
        repo.patch_all(None, em.ScriptPatch(BAD))
    error = raised.value
    assert (error.line, error.column, error.position) == (2, 20, offset)
    assert str(error).splitlines() == [
        "patch_all on Message: the painless script does not compile: "
        "invalid sequence of tokens near [';'].",
        "at line 2, column 20:",
        "    ctx._source.body = ;",
        "                       ^",
    ]
    assert isinstance(error.__cause__, BadRequestError)  # the client's error, chained


def test_a_task_that_failed_on_the_script(make_mapper: MakeMapper, cluster: ClusterProxy) -> None:
    """On a cluster that keeps tasks, the update-by-query starts as a task and the script's
    error is the task's ``error``: the same ScriptError."""
    mapper = make_mapper(Message, url=cluster.url, configure=True)
    repo = mapper.repository(Message)
    repo.add(Message(tenant="t", message_id="m", handler_type="h"), consistency="wait")
    with pytest.raises(em.ScriptError) as raised:
        repo.patch_all(None, em.ScriptPatch(BAD))
    assert cluster.tasks.started == 1  # (it ran as a task)
    assert raised.value.reason == "compile error" and raised.value.script == BAD
    assert str(raised.value).startswith("patch_all on Message: the painless script does not")


@pytest.mark.parametrize("server", ["local", "a cluster keeping tasks"])
def test_a_script_failing_while_running_says_what_it_may_have_patched(
    make_mapper: MakeMapper, cluster: ClusterProxy, server: str
) -> None:
    """An update-by-query stops at the first document its script fails on and keeps what
    it wrote before: the ScriptError says so (its ``succeeded`` is empty, which would read
    as "nothing was written"), and the model's change is announced; also when the
    update-by-query ran as a task and the error is the task's."""
    mapper = make_mapper(Message, url=cluster.url if server != "local" else None, configure=True)
    messages = mapper.repository(Message)
    messages.add(
        [Message(tenant="t", message_id=f"m{i}", handler_type="h", body=f"b{i}") for i in range(5)],
        consistency="wait",
    )
    script = (
        "if (ctx._source.body == 'b3') { ctx._source.body = ctx._source.nothing.length(); }\n"
        "ctx._source.body = 'patched';"
    )
    changed: list[object] = []

    def listen(sender: object, **kwargs: object) -> None:
        changed.append(sender)

    em.signals.documents_changed.connect(listen, sender=Message)
    try:
        with pytest.raises(em.ScriptError) as raised:
            messages.patch_all(None, em.ScriptPatch(script))
    finally:
        em.signals.documents_changed.disconnect(listen, sender=Message)
    error = raised.value
    assert error.reason == "runtime error"
    assert "matching documents it reached before may be patched" in str(error)
    bodies = [m.body for m in messages.find(limit=10, consistency="immediate")]
    assert "patched" in bodies  # (the local server's run: those before b3 were patched)
    assert changed == [Message]
    if server != "local":
        assert cluster.tasks.started == 1  # (it ran as a task)
