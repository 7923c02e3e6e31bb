"""One esmapper :class:`~esmapper.session.Session` per Flask request.

Usage::

    import esmapper as em
    from flask import Flask, abort, redirect, url_for
    from esmapper.contrib.flask import EsmapperFlask, current_mapper, session

    mapper = em.Mapper("http://127.0.0.1:9200", models=[Employee])
    app = Flask(__name__)
    EsmapperFlask(app, mapper, consistency="wait")  # session options
    # or, equivalently: esmapper.contrib.flask.init_app(app, mapper, consistency="wait")

    @app.post("/employees/<id>/birthday")
    def birthday(id: str):
        employee = session.get(Employee, id)
        if employee is None:
            abort(404)
        employee.age += 1            # tracked by the session; written when the request succeeds
        return redirect(url_for("show", id=id))

    @app.get("/stats")
    def stats():
        return {"employees": current_mapper.repository(Employee).count()}

What happens in each request (the rule every esmapper web integration shares: the guide's
"Sessions in web apps" page, section "The rule for every request"):

1. ``before_request`` opens a session, ``mapper.session(**session_options)``, kept on
   :data:`flask.g`. :data:`session` is a proxy to it (:func:`get_session` returns the session
   object itself).
2. ``after_request`` (the request produced a response): when ``commit_when(response)`` is
   true (by default: the status is below 400) the session is **committed** *before* the
   response is sent, so a failing write becomes an error response instead of a redirect to
   data that was never written (the error goes through Flask's 500 handling; a handler for
   500 finds it in ``e.original_exception``). An error response (4xx/5xx) **rolls back**: a
   form re-rendered with its validation errors writes nothing.
3. ``teardown_request`` (always, with the exception that ended the request, if any): a
   session that step 2 did not settle is rolled back when there was an exception and
   committed otherwise (e.g. a request context driven by hand); then it is **closed**, in
   every case.

To show write errors on the page (``DocumentValidationError``, ``VersionConflictError``,
``DuplicateDocumentError``), call ``session.flush()`` in the view: the errors are raised while
the view can still render something, and the commit of step 2 has nothing left to write.

Outside a request but inside an application context (a CLI command, ``flask shell``),
:data:`session` opens a session on first use; commit it yourself: it is closed, with its
pending changes dropped, when the application context ends.

Sessions are not thread-safe, but each request (each thread or greenlet of the server) gets
its own; the mapper is shared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import attrs
from flask import Flask, Response, current_app, g
from werkzeug.local import LocalProxy

from esmapper.contrib import _request
from esmapper.contrib._request import RequestSession
from esmapper.mapper import Mapper
from esmapper.session import Session

__all__ = [
    "EXTENSION_KEY",
    "CommitPredicate",
    "EsmapperFlask",
    "commit_on_success",
    "current_mapper",
    "get_session",
    "init_app",
    "session",
]

#: The key of the extension's per-app state in ``app.extensions``.
EXTENSION_KEY = "esmapper"
#: The attribute of :data:`flask.g` that holds the request's session.
_G_KEY = "_esmapper_session"

#: ``commit_when(response) -> bool``: whether a request that produced ``response`` commits.
CommitPredicate = Callable[[Response], bool]


def commit_on_success(response: Response) -> bool:
    """The default ``commit_when``: commit unless the response is an error (status >= 400)."""
    return _request.commit_on_success(response.status_code)


@attrs.define
class _AppState:
    """What :meth:`EsmapperFlask.init_app` stores in ``app.extensions["esmapper"]``."""

    mapper: Mapper
    session_options: dict[str, Any]
    commit_when: CommitPredicate


class EsmapperFlask:
    """The Flask extension: ``EsmapperFlask(app, mapper, **session_options)``.

    ``session_options`` (``consistency``, ``soft_deletes``, ``notifications``, ...) are
    passed to ``mapper.session()`` for every request and checked here, at set-up time.
    ``commit_when(response)`` decides whether a request that produced ``response`` commits
    (default :func:`commit_on_success`: status below 400); otherwise it rolls back.

    With the application factory pattern, create it without an app and call
    :meth:`init_app` later (once per app; each app may use its own mapper)::

        esm = EsmapperFlask(consistency="wait")

        def create_app(mapper):
            app = Flask(__name__)
            esm.init_app(app, mapper)
            return app
    """

    def __init__(
        self,
        app: Flask | None = None,
        mapper: Mapper | None = None,
        *,
        commit_when: CommitPredicate | None = None,
        **session_options: Any,
    ) -> None:
        self.mapper = mapper
        self.commit_when: CommitPredicate = commit_when or commit_on_success
        self.session_options = session_options
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask, mapper: Mapper | None = None, **session_options: Any) -> None:
        """Register the request hooks on ``app``, with ``mapper`` (default: the one given to
        the constructor) and ``session_options`` on top of the constructor's.

        Raises ``TypeError`` without a mapper or for an unknown option, ``ValueError`` for a
        bad option value, ``RuntimeError`` when ``app`` is already set up.
        """
        chosen = mapper if mapper is not None else self.mapper
        if chosen is None:
            raise TypeError(
                "EsmapperFlask needs a mapper: EsmapperFlask(app, mapper) or init_app(app, mapper)"
            )
        if EXTENSION_KEY in app.extensions:
            raise RuntimeError(f"esmapper is already set up on the Flask app {app.name!r}")
        options = _request.checked_options({**self.session_options, **session_options})
        app.extensions[EXTENSION_KEY] = _AppState(chosen, options, self.commit_when)
        app.before_request(_open_session)
        app.after_request(_settle_session)
        app.teardown_request(_teardown_session)
        app.teardown_appcontext(_close_leftover)

    @staticmethod
    def state(app: Flask | None = None) -> _AppState:
        """The extension state of ``app`` (default: the current app)."""
        return _state(app)


def init_app(
    app: Flask,
    mapper: Mapper,
    *,
    commit_when: CommitPredicate | None = None,
    **session_options: Any,
) -> EsmapperFlask:
    """Set up one session per request on ``app`` (see the module docstring); returns the
    extension object. Same as ``EsmapperFlask(app, mapper, **session_options)``."""
    return EsmapperFlask(app, mapper, commit_when=commit_when, **session_options)


def _state(app: Flask | None = None) -> _AppState:
    if app is None:
        app = current_app
    state = app.extensions.get(EXTENSION_KEY)
    if not isinstance(state, _AppState):
        raise RuntimeError(
            f"esmapper is not set up on the Flask app {app.name!r}: call "
            "esmapper.contrib.flask.init_app(app, mapper) (or EsmapperFlask(app, mapper))"
        )
    return state


def _held(*, create: bool) -> RequestSession | None:
    held = cast("RequestSession | None", g.get(_G_KEY))
    if held is None and create:
        state = _state()
        held = RequestSession.open(state.mapper, state.session_options)
        setattr(g, _G_KEY, held)
    return held


def get_session() -> Session:
    """The session of the current request (opened on first use in an application context).

    Raises ``RuntimeError`` outside an application context or when the app is not set up.
    """
    held = _held(create=True)
    assert held is not None
    return held.session


def _open_session() -> None:
    _held(create=True)


def _settle_session(response: Response) -> Response:
    held = _held(create=False)
    if held is None or held.settled:
        return response
    # settled also when the commit raises: Flask calls this hook again for the 500
    held.settle(commit=_state().commit_when(response))
    return response


def _teardown_session(exc: BaseException | None) -> None:
    held = cast("RequestSession | None", g.pop(_G_KEY, None))
    if held is not None:
        held.end(exc)


def _close_leftover(exc: BaseException | None) -> None:
    """End of an application context: close a session opened outside a request."""
    held = cast("RequestSession | None", g.pop(_G_KEY, None))
    if held is not None:
        held.session.close()


#: The current request's :class:`~esmapper.session.Session` (a proxy; see :func:`get_session`).
session: Session = cast(Session, LocalProxy(get_session))

#: The :class:`~esmapper.mapper.Mapper` of the current app (a proxy).
current_mapper: Mapper = cast(Mapper, LocalProxy(lambda: _state().mapper))
