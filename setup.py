"""Build hook: compile attnlab's message catalogs (``.po``) into ``.mo`` before the package is built.

Everything else is in pyproject.toml. The ``.mo`` files are build outputs (git ignores them); the
wheel and an editable install get them from here, a checkout from ``python -m bookbuild.i18n.catalogs``;
both call ``attnlab/_catalogs.py``. Without babel the build still succeeds: attnlab then compiles
the ``.po`` in memory when it can, or shows English.
"""
import runpy
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithCatalogs(build_py):
    def run(self):
        try:
            import babel  # noqa: F401
        except ImportError:
            print("attnlab build: babel is not installed; message catalogs not compiled")
        else:
            # by its path: attnlab itself (numpy, torch) is not importable in the build's environment
            runpy.run_path(str(HERE / "attnlab" / "_catalogs.py"))["compile_all"](HERE / "attnlab" / "locale",
                                                                                  stale_only=False)
        super().run()


setup(cmdclass={"build_py": BuildPyWithCatalogs})
