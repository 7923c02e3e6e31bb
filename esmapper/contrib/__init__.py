"""Integrations with other frameworks (each imports its framework; import them explicitly).

- :mod:`esmapper.contrib.flask`: one session per Flask request, committed on success.
- :mod:`esmapper.contrib.fastapi`: one session per FastAPI request, committed on success.
- :mod:`esmapper.contrib.django`: one session per Django request (a middleware), committed
  on success; the mapper from ``settings.ESMAPPER``; ``manage.py esmapper``; Django models
  mirrored into Elasticsearch.

- :mod:`esmapper.contrib.mypy`: a mypy plugin typing ``Model.<field>`` read on a model
  class as the field reference it is at run time.

All three end a request's session by one rule, owned by ``esmapper.contrib._request``: commit
before the response is sent when it is not an error (status below 400), roll back on an
error status or an exception, close always.
"""
