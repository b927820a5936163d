"""Five fixes that let the Chinese edition translate every visible text of a page, and only that.

1. Exercise titles. sphinx-exercise builds the title of an exercise from the directive's argument
   without a source position, and Sphinx's gettext machinery skips nodes without one, so the
   titles were never extracted. A transform that runs before Sphinx's ``Locale`` gives those
   nodes the position of their directive; they are then extracted and translated like a heading.
2. Computed numbers in translated paragraphs. Sphinx parses each translated paragraph as a small
   document of its own, which has no notebook attached, so ``{glue:text}`` found no glue data
   ("No key ... found in glue data for this document"). Before a translation is parsed, its glue
   roles are pointed at the page itself (``{glue:text}`page.md::key```), which myst-nb resolves
   from the page's glue cache; translators write the short form, as in the English text.
3. Footnote references in a translated paragraph (``SDPA[^sdpa]``) get stub definitions, since
   MyST reads a reference only where its footnote is defined.
4. Solution titles repeat their exercise's title as it was read, in English; they get the
   exercise page's translation of it.
5. Computed outputs. A cell's Markdown output (the checking page's list of tests, the instructors'
   table of exercises, an explorer's caption) is computed, and in the Chinese edition it is
   computed in Chinese by attnlab's own messages; extracted into the catalogs it would make every
   change to a test docstring a stale translation. Cell outputs are therefore not translatable,
   except figure captions, which the author writes in the cell's metadata.
"""
from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.transforms import SphinxTransform, i18n
from sphinx.transforms.i18n import Locale
from sphinx.transforms.post_transforms import SphinxPostTransform

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


class KeepCellOutputsUntranslated(SphinxTransform):
    default_priority = Locale.default_priority - 1

    def apply(self, **kwargs) -> None:
        for output in self.document.findall(nodes.container):
            if output.get("nb_element") != "cell_code_output":
                continue
            # a figure's caption is the author's (the cell's metadata): it is translated
            captions = [n for c in output.findall(nodes.caption) for n in c.findall(nodes.TextElement)]
            for node in output.findall(nodes.TextElement):
                if node not in captions:
                    node["translatable"] = False
            if self.app.builder.name == "gettext":     # an image's alt text is extracted regardless
                for image in output.findall(nodes.image):
                    image.attributes.pop("alt", None)


def _extract_exercise_titles(app, doctree) -> None:
    """The gettext builder reads messages after sphinx-exercise has rebuilt the titles (without
    a source again), so the titles are added to the page's catalog when the page is read."""
    if app.builder.name != "gettext":
        return
    from sphinx.builders.gettext import MsgOrigin
    from sphinx.util.i18n import docname_to_domain

    catalog = app.builder.catalogs[docname_to_domain(app.env.docname, app.config.gettext_compact)]
    for node in doctree.findall(nodes.subtitle):
        if type(node).__name__ in SUBTITLE_CLASSES and node.rawsource:
            catalog.add(node.rawsource, MsgOrigin(node.source, node.line or 0))


_GLUE_ROLE = re.compile(r"\{glue(?::(?P<kind>\w+))?\}`(?P<body>[^`]+)`")


def _on_page(page: str, match: re.Match) -> str:
    body = match["body"]
    if "::" in body:
        return match[0]
    if match["kind"] == "text" and ":" not in body:
        body += ":s"        # myst-nb reads "page.md::key" without a format as key "page.md:"
    return match[0].replace(f"`{match['body']}`", f"`{page}::{body}`")


_FOOTNOTE_REF = re.compile(r"\[\^(?P<label>[^\]\s]+)\](?!:)")


def _with_footnote_stubs(source: str) -> str:
    """MyST reads ``[^label]`` as a footnote reference only where the footnote is defined; a
    translated paragraph is parsed alone, so stub definitions follow it (only the paragraph,
    the first node, is used: Sphinx then links the reference to the page's real footnote)."""
    labels = dict.fromkeys(m["label"] for m in _FOOTNOTE_REF.finditer(source))
    return source + "".join(f"\n\n[^{label}]: ." for label in labels)


def _publish_with_page_glue(publish):
    """Point the glue roles of a translated paragraph at its own page (``page.md::key``), which
    myst-nb resolves from the page's glue cache after parsing; keep its footnote references."""
    def publish_msgstr(app, source, source_path, source_line, config, settings):
        page = Path(source_path).name
        source = _with_footnote_stubs(_GLUE_ROLE.sub(lambda m: _on_page(page, m), source))
        return publish(app, source, source_path, source_line, config, settings)
    return publish_msgstr


class TranslateExerciseTitlesInSolutions(SphinxPostTransform):
    """A solution's title repeats its exercise's title ("Solution to Exercise 13 (A causal mask
    ...)"), copied by sphinx-exercise from the exercise as it was read, before translation. In a
    translated edition the copy is replaced by the exercise page's translation of that title."""
    default_priority = 22               # after sphinx-exercise writes the solution titles (21)

    def run(self, **kwargs) -> None:
        from sphinx.locale import init as init_locale
        from sphinx.util.i18n import docname_to_domain
        from sphinx_exercise.nodes import exercise_subtitle, solution_node

        config = self.config
        registry = getattr(self.env, "sphinx_exercise_registry", {})
        if not config.language or config.language.startswith("en") or not registry:
            return
        dirs = [str(Path(self.app.srcdir) / d) for d in config.locale_dirs]
        for solution in self.document.findall(solution_node):
            target = registry.get(solution.get("target_label"), {})
            exercise = target.get("node")
            subtitles = list(exercise.findall(exercise_subtitle)) if exercise is not None else []
            if not subtitles:
                continue
            english = subtitles[0].astext()
            domain = docname_to_domain(target.get("docname", ""), config.gettext_compact)
            catalog, _ = init_locale(dirs, config.language, domain)
            chinese = catalog.gettext(english)
            if chinese == english:
                continue
            for text in list(solution.children[0].findall(nodes.Text)):
                if text.astext() == english:
                    text.parent.replace(text, nodes.Text(chinese))
        if config.language.startswith("zh"):
            self._full_width_parentheses()

    def _full_width_parentheses(self) -> None:
        """"练习 13（带偏移的因果掩码）": sphinx-exercise writes " (" and ")" around a title."""
        from sphinx_exercise.nodes import exercise_enumerable_node, solution_node

        for box in [*self.document.findall(exercise_enumerable_node), *self.document.findall(solution_node)]:
            if not box.children or not isinstance(box.children[0], nodes.title):
                continue
            for text in list(box.children[0].findall(nodes.Text)):
                marks = {" (": "（", "(": "（", ")": "）"}
                if text.astext() in marks:
                    text.parent.replace(text, nodes.Text(marks[text.astext()]))


def setup(app):
    app.add_transform(GiveExerciseTitlesASource)
    app.add_transform(KeepCellOutputsUntranslated)
    app.add_post_transform(TranslateExerciseTitlesInSolutions)
    app.connect("doctree-read", _extract_exercise_titles)
    if not getattr(i18n.publish_msgstr, "_with_page_glue", False):
        i18n.publish_msgstr = _publish_with_page_glue(i18n.publish_msgstr)
        i18n.publish_msgstr._with_page_glue = True
    return {"parallel_read_safe": True, "parallel_write_safe": True}
