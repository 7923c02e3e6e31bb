"""An employee directory: a small Flask application on esmapper.

- :mod:`.models`: the models (``Employee`` with an embedded ``Address``, soft deletes, dates
  and versions; ``Team`` with an id composed from ``("company_id", "slug")``) and the
  application's ``mapper``;
- :mod:`.app`: ``create_app(mapper)``, the Flask application (one session per request
  through :mod:`esmapper.contrib.flask`);
- :mod:`.migrations`: the data migrations ``esmapper migrate`` runs;
- :mod:`.sample_data`: ``load(mapper, n=...)`` fills the directory;
- :mod:`.run`: ``python -m examples.webapp`` serves it on http://127.0.0.1:5000/.
"""
