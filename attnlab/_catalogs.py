"""Compiling message catalogs, ``.po`` into ``.mo``: the one place it is done.

``attnlab.i18n`` compiles a catalog in memory where its ``.mo`` is missing or older (an edited
checkout); ``python -m bookbuild.i18n.catalogs`` writes the ``.mo`` files of a checkout; the package
build (``setup.py``, which runs this file by its path: the package itself is not importable while
it is being built) writes them into the wheel. Needs babel (a build and dev dependency, not a
runtime one). Imports nothing from attnlab.
"""
from __future__ import annotations

import io
from pathlib import Path


def compiled(po: Path) -> bytes:
    """The ``.mo`` of the catalog ``po`` (``<locale>/<lang>/LC_MESSAGES/<domain>.po``); fuzzy entries left out."""
    from babel.messages import mofile, pofile

    with po.open("rb") as handle:
        catalog = pofile.read_po(handle, locale=po.parts[-3])
    buffer = io.BytesIO()
    mofile.write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def compile_all(locale: Path, stale_only: bool = True) -> list[Path]:
    """Write the ``.mo`` of every ``<locale>/*/LC_MESSAGES/*.po`` (only those missing or older, by default)."""
    written = []
    for po in sorted(locale.glob("*/LC_MESSAGES/*.po")):
        mo = po.with_suffix(".mo")
        if stale_only and mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
            continue
        mo.write_bytes(compiled(po))
        written.append(mo)
    return written
