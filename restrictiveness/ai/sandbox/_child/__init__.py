"""Code that runs inside the sandboxed interpreter.

The parent starts ``python -I -B -c BOOTSTRAP <this directory> <config.json>``; the bootstrap
loads this directory by path as the package ``rx_sandbox_child`` and calls :func:`main.main`.
Nothing here imports :mod:`restrictiveness` (whose import touches files and modules the sandbox
refuses), and everything is imported before the file system is replaced.
"""

import sys

#: Modules loaded before the child's own code: what a program finds already imported is these
#: plus what the setup needed and the guard does not deny (see :func:`main.forget_denied`).
BASELINE = frozenset(sys.modules)
