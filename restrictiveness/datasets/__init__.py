"""Data loaders: the Nevo (2000) cereal sample shipped with the package and the Bruhin, Fehr-Duda &
Epper (2010) lottery responses read from a path the user gives (never shipped).

May import :mod:`restrictiveness.shared` only.
"""

from .bruhin import BRUHIN_COLUMNS, BRUHIN_SCALE, load_bruhin
from .cereal import load_cereal

__all__ = ["BRUHIN_COLUMNS", "BRUHIN_SCALE", "load_bruhin", "load_cereal"]
