"""Every topic module of the package is imported here, so that each ``@checker`` is registered.

A topic is any module of ``attnlab.checks`` that is not part of the machinery below: adding
``attnlab/checks/<topic>.py`` is enough for its checkers to appear in ``attnlab.checks`` and in the
catalogue.
"""
import importlib
import pkgutil

MACHINERY = {"answer_table", "catalogue", "engine", "kernels", "limits", "mistakes", "registry", "result", "seeds",
             "topics"}

_PACKAGE = importlib.import_module(__package__)
TOPICS = sorted(info.name for info in pkgutil.iter_modules(_PACKAGE.__path__)
                if info.name not in MACHINERY and not info.name.startswith("_"))

for _topic in TOPICS:
    importlib.import_module(f"{__package__}.{_topic}")
