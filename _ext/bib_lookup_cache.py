"""Workaround: pybtex looks its plugins up through the installed packages' entry points on every call,
uncached (no issue filed upstream; pygments had the same cost and fixed it the same way,
pygments/pygments#2979). Remove when a pybtex release caches its entry points: the build's profile
then shows no time in ``pybtex.plugin``.

pybtex's plugin lookups, cached: a quarter of the book's build time was spent in them.

pybtex finds each plugin (the "text" backend, a label style...) by asking the installed packages'
entry points, every time: ``render_as("text")`` on a name, once per cited reference per page. In
this venv one lookup reads the metadata of every installed package (about 0.2-0.4 s), and a build
made some 300 of them: 76 s of a 296 s profile of the English edition. The packages cannot
change while Sphinx runs, so the answer to each lookup is kept for the rest of the process.
"""
from __future__ import annotations

import functools

import pybtex.plugin
import sphinxcontrib.bibtex.plugin

_uncached = pybtex.plugin.entry_points


@functools.lru_cache(maxsize=None)
def _entry_points(selection: tuple) -> tuple:
    return tuple(_uncached(**dict(selection)))


def cached_entry_points(**selection) -> tuple:
    """What ``importlib.metadata.entry_points(**selection)`` returns, looked up once per selection."""
    return _entry_points(tuple(sorted(selection.items())))


pybtex.plugin.entry_points = cached_entry_points
sphinxcontrib.bibtex.plugin.entry_points = cached_entry_points


def setup(app):
    return {"parallel_read_safe": True, "parallel_write_safe": True}
