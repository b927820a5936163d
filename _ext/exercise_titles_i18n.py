"""Workaround for executablebooks/sphinx-exercise#13 and #73 (no internationalisation): exercise titles
are extracted for translation and translated.

sphinx-exercise builds the title of an exercise from the directive's argument without a source
position, and Sphinx's gettext machinery skips nodes without one, so the titles were never
extracted. A transform that runs just before Sphinx's ``Locale`` gives those nodes the position of
their directive; they are then translated like a heading. The gettext builder reads messages after
sphinx-exercise has rebuilt the titles (without a source again), so the titles are also added to
the page's catalog when the page is read.

Remove when a sphinx-exercise release translates its titles (the issues above closed).
"""
from __future__ import annotations

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.i18n import Locale

SUBTITLE_CLASSES = ("exercise_subtitle", "solution_subtitle")


class GiveExerciseTitlesASource(SphinxTransform):
    default_priority = Locale.default_priority - 1     # just before translation

    def apply(self, **kwargs) -> None:
        for node in self.document.findall(nodes.subtitle):
            if type(node).__name__ not in SUBTITLE_CLASSES or node.source:
                continue
            parent = node.parent
            while parent is not None and not parent.source:
                parent = parent.parent
            node.source = parent.source if parent is not None else self.document["source"]
            node.line = parent.line if parent is not None else None
            node.rawsource = node.rawsource or node.astext()


def _extract_exercise_titles(app, doctree) -> None:
    if app.builder.name != "gettext":
        return
    from sphinx.builders.gettext import MsgOrigin
    from sphinx.util.i18n import docname_to_domain

    catalog = app.builder.catalogs[docname_to_domain(app.env.docname, app.config.gettext_compact)]
    for node in doctree.findall(nodes.subtitle):
        if type(node).__name__ in SUBTITLE_CLASSES and node.rawsource:
            catalog.add(node.rawsource, MsgOrigin(node.source, node.line or 0))


def setup(app):
    app.add_transform(GiveExerciseTitlesASource)
    app.connect("doctree-read", _extract_exercise_titles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
