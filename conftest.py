"""Doctest set-up shared by the package's docstrings (``--doctest-modules``).

The methods of a results class are shown on one small object, built once per session by running
its class's docstring example (a study of its own in every method's example would rerun a study
per method). Each method example names the object it uses:

* ``study`` — the :class:`restrictiveness.Study` example's study;
* ``res`` — the :class:`restrictiveness.Results` example's results;
* ``comp`` — the :class:`restrictiveness.CompletenessResults` example's results.

Running the class examples (rather than repeating their code here) keeps what a reader sees and
what the methods' examples use the same.
"""

from __future__ import annotations

import doctest
import functools
import re

import pytest
from _pytest.doctest import DoctestItem

#: Class whose docstring example builds each shared name.
SHARED = {"study": "Study", "res": "Results", "comp": "CompletenessResults"}


@functools.cache
def _shared_example(name: str):
    """Run the docstring example of ``SHARED[name]`` as doctest would (in a copy of its
    module's globals) and return the object it binds to ``name``."""
    import sys

    import matplotlib

    import restrictiveness as rx

    matplotlib.use("Agg")
    cls = getattr(rx, SHARED[name])
    globs = dict(vars(sys.modules[cls.__module__]))
    for example in doctest.DocTestParser().get_examples(cls.__doc__):
        exec(compile(example.source, f"<{cls.__name__} example>", "exec"), globs)  # noqa: S102
    return globs[name]


@pytest.fixture(autouse=True)
def _doctest_shared(request):
    """Put the shared example objects in the namespace of docstring examples that use them."""
    # Into this example's globals only (not the session's doctest_namespace), so an example
    # that forgets to build an object it uses fails whatever ran before it.
    if isinstance(request.node, DoctestItem):
        source = "\n".join(ex.source for ex in request.node.dtest.examples)
        # used, and not bound by the example itself (``res = ...`` at the start of a line)
        # and not a name of the example's module (``rx.lottery.study`` the function)
        globs = request.node.dtest.globs
        used = {n for n in SHARED if n not in globs and re.search(rf"\b{n}\b", source)
                and not re.search(rf"^{n}\b[^=\n]*=(?!=)", source, re.MULTILINE)}
        globs.update({n: _shared_example(n) for n in sorted(used)})
