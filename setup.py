"""Build hook: compile attnlab's message catalogs (``.po``) into ``.mo`` before the package is built.

Everything else is in pyproject.toml. The ``.mo`` files are build outputs (git ignores them); the
wheel and an editable install get them from here, a checkout from ``tools/compile_messages.py``.
Without babel the build still succeeds: attnlab then compiles the ``.po`` in memory when it can,
or shows English.
"""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

LOCALE = Path(__file__).resolve().parent / "attnlab" / "locale"


def compile_catalogs() -> None:
    try:
        from babel.messages import mofile, pofile
    except ImportError:
        print("attnlab build: babel is not installed; message catalogs not compiled")
        return
    for po in sorted(LOCALE.glob("*/LC_MESSAGES/*.po")):
        with po.open("rb") as handle:
            catalog = pofile.read_po(handle, locale=po.parts[-3])
        with po.with_suffix(".mo").open("wb") as handle:
            mofile.write_mo(handle, catalog, use_fuzzy=False)


class BuildPyWithCatalogs(build_py):
    def run(self):
        compile_catalogs()
        super().run()


setup(cmdclass={"build_py": BuildPyWithCatalogs})
