"""Files the package ships: the Nevo (2000) cereal data with its licence, and the paper's
reference tables. A package (not a bare directory) so that ``packages = find:`` puts it in the
wheel; :mod:`restrictiveness.datasets` reads it with :mod:`importlib.resources`. Imports nothing.
"""
