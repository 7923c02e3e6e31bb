"""The site's middlewares: its esmapper middleware, whose errors are pages, and the
``X-Worker`` header naming the process that served a page."""

from __future__ import annotations

import os
from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render

from esmapper.contrib.django import EsmapperMiddleware
from esmapper.contrib.django.middleware import error_response, error_status
from esmapper.errors import EsmapperError

__all__ = ["ContactsMiddleware", "name_the_worker"]

TITLES = {404: "Not found", 409: "Changed by someone else", 422: "Not accepted"}


class ContactsMiddleware(EsmapperMiddleware):
    """:class:`~esmapper.contrib.django.EsmapperMiddleware` answering its errors (a contact
    that does not exist, an edit that lost to another: the commit's conflict) with a page."""

    def error_response(self, request: HttpRequest, error: EsmapperError) -> HttpResponse:
        if request.headers.get("Accept", "").startswith("application/json"):
            return error_response(request, error)
        for _ in messages.get_messages(request):
            pass  # a "saved" message of a request whose commit failed is not shown
        status = error_status(error) or 500
        return render(
            request,
            "contacts/error.html",
            {"title": TITLES.get(status, "Error"), "detail": str(error)},
            status=status,
        )


def name_the_worker(
    get_response: Callable[[HttpRequest], HttpResponseBase],
) -> Callable[[HttpRequest], HttpResponseBase]:
    """Every answer names its worker process in an ``X-Worker`` header."""

    def middleware(request: HttpRequest) -> HttpResponseBase:
        response = get_response(request)
        response["X-Worker"] = str(os.getpid())
        return response

    return middleware
