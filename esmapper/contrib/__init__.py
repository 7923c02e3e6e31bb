"""Integrations with other frameworks (each imports its framework; import them explicitly).

- :mod:`esmapper.contrib.flask`: one session per Flask request, committed on success.
"""
