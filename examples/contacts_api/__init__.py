"""A contacts API: a small FastAPI application on esmapper.

- :mod:`.models`: ``Contact`` (per-company custom fields, soft deletes, dates, versions, a
  by-id cache) and ``build_mapper()``, configured from the environment;
- :mod:`.app`: ``create_app(mapper)``, the FastAPI application (one session per request
  through :mod:`esmapper.contrib.fastapi`), and ``app``, the one ``uvicorn`` serves;
- :mod:`.workers`: several uvicorn worker processes on one port, sharing Redis;
- :mod:`.run`: ``python -m examples.contacts_api`` serves it on http://127.0.0.1:8000/
  (the OpenAPI page is ``/docs``).
"""
