"""``python -m restrictiveness``: see :mod:`restrictiveness.cli`."""

from .cli import entry

entry()
