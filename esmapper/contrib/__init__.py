"""Integrations with other frameworks (each imports its framework; import them explicitly).

- :mod:`esmapper.contrib.flask`: one session per Flask request, committed on success.
- :mod:`esmapper.contrib.mypy`: a mypy plugin typing ``Model.<field>`` read on a model
  class as the field reference it is at run time.
"""
