"""A directory put first on the ``PYTHONPATH`` of a spec-checked test run's subprocesses:
its ``sitecustomize`` installs the request recorder there (see
:mod:`esmapper.testing._spec_recorder`)."""
