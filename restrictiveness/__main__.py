"""``python -m restrictiveness``: see :mod:`restrictiveness.cli`."""

from .cli import main

raise SystemExit(main())
