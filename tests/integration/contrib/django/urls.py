"""The views of the middleware and sync tests (each does what its name says). The views of
notes use no database: they are out of ATOMIC_REQUESTS (whose transactions the test
settings make take the write lock at once, which would queue concurrent requests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from django.db import transaction
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    JsonResponse,
    StreamingHttpResponse,
)
from django.urls import path

import esmapper as em
from esmapper.contrib.django import get_mapper, session

from .documents import Note
from .rows.models import Row


class Hooks:
    """What the edit view does between its read and its return (set by a test)."""

    between: Callable[[], object] = staticmethod(lambda: None)


@transaction.non_atomic_requests
def create(request: HttpRequest, id: str) -> HttpResponse:
    session(request).add(Note(id=id, text=request.GET.get("text", "")))
    return JsonResponse({"id": id}, status=201)


@transaction.non_atomic_requests
def create_then_fail(request: HttpRequest, id: str) -> HttpResponse:
    session(request).add(Note(id=id, text="never"))
    raise RuntimeError("the request fails after its write")


@transaction.non_atomic_requests
def create_then_refuse(request: HttpRequest, id: str) -> HttpResponse:
    session(request).add(Note(id=id, text="never"))
    return HttpResponse("refused after the write", status=400)


@transaction.non_atomic_requests
def edit(request: HttpRequest, id: str) -> HttpResponse:
    note = session(request).get(Note, id, cache=False)
    if note is None:
        raise em.DocumentNotFoundError(id)
    note.text = request.GET["text"]
    Hooks.between()
    return JsonResponse({"id": id, "text": note.text})


@transaction.non_atomic_requests
def search(request: HttpRequest) -> HttpResponse:
    return JsonResponse([n.text for n in session(request).find(Note, request.GET["q"])], safe=False)


def save_row(request: HttpRequest, pk: int) -> HttpResponse:
    """Save the row with ``title``; ``then`` = ``fail`` raises after it (the database rolls
    back: ATOMIC_REQUESTS), ``refuse`` answers 400 (the database commits)."""
    row, _ = Row.objects.get_or_create(pk=pk)
    row.title = request.GET["title"]
    row.save()
    then = request.GET.get("then")
    if then == "fail":
        raise RuntimeError("the request fails after saving the row")
    if then == "refuse":
        return HttpResponse("refused", status=400)
    return HttpResponse("saved")


def save_row_and_edit_note(request: HttpRequest, pk: int, id: str) -> HttpResponse:
    """Under ATOMIC_REQUESTS: save the row and edit the note with ``title`` (``Hooks.between``
    in between); ``flush`` flushes the session in the view, inside the transaction."""
    Row.objects.update_or_create(pk=pk, defaults={"title": request.GET["title"]})
    note = session(request).get(Note, id, cache=False)
    if note is None:
        raise em.DocumentNotFoundError(id)
    note.text = request.GET["title"]
    Hooks.between()
    if request.GET.get("flush"):
        session(request).flush()
    return HttpResponse("saved")


@transaction.non_atomic_requests
def create_then_stream(request: HttpRequest, id: str) -> HttpResponse:
    """Add a note, answer a stream whose body reads it back (from a session of its own)."""
    session(request).add(Note(id=id, text="streamed"))

    def body() -> Iterator[str]:
        stored = get_mapper().repository(Note).get(id, cache=False)
        yield "committed" if stored is not None else "not yet"

    return StreamingHttpResponse(body())


@transaction.non_atomic_requests
def create_then_redirect(request: HttpRequest, id: str) -> HttpResponse:
    session(request).add(Note(id=id, text="redirected"))
    return HttpResponseRedirect(f"/notes/{id}")


@transaction.non_atomic_requests
def plain(request: HttpRequest) -> HttpResponse:
    return HttpResponse("no esmapper here")


urlpatterns = [
    path("notes/<str:id>", create),
    path("notes/<str:id>/then-fail", create_then_fail),
    path("notes/<str:id>/then-refuse", create_then_refuse),
    path("notes/<str:id>/edit", edit),
    path("notes/<str:id>/then-stream", create_then_stream),
    path("notes/<str:id>/then-redirect", create_then_redirect),
    path("plain", plain),
    path("search", search),
    path("rows/<int:pk>", save_row),
    path("rows/<int:pk>/notes/<str:id>", save_row_and_edit_note),
]
