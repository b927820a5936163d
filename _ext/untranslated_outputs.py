"""Bespoke: computed cell outputs are not translatable; only figure captions, which the author writes.

A cell's Markdown output (the checking page's list of tests, the instructors' table of exercises,
an explorer's caption) is computed, and in the Chinese edition it is computed in Chinese by
attnlab (``attnlab.edge``); extracted into the page catalogs it would make every change to a test
docstring a stale translation. Every text of a cell's output is marked untranslatable, except a
figure's caption (the cell's metadata), and the gettext builder does not extract an output
image's alt text.
"""
from __future__ import annotations

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.i18n import Locale


class KeepCellOutputsUntranslated(SphinxTransform):
    default_priority = Locale.default_priority - 1

    def apply(self, **kwargs) -> None:
        for output in self.document.findall(nodes.container):
            if output.get("nb_element") != "cell_code_output":
                continue
            captions = [n for c in output.findall(nodes.caption) for n in c.findall(nodes.TextElement)]
            for node in output.findall(nodes.TextElement):
                if node not in captions:
                    node["translatable"] = False
            if self.app.builder.name == "gettext":     # an image's alt text is extracted regardless
                for image in output.findall(nodes.image):
                    image.attributes.pop("alt", None)


def setup(app):
    app.add_transform(KeepCellOutputsUntranslated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
