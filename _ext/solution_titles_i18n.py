"""Workaround for executablebooks/sphinx-exercise#73 (no internationalisation): a solution's title shows
its exercise's title in the edition's language.

A solution's title repeats its exercise's title ("Solution to Exercise 13 (A causal mask ...)"),
copied by sphinx-exercise from the exercise as it was read, before translation. In a translated
edition the copy is replaced by the exercise page's translation of that title, and in Chinese the
parentheses around it become full-width ("练习 13（带偏移的因果掩码）").

Remove when a sphinx-exercise release translates solution titles (the issue above closed).
"""
from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform


class TranslateExerciseTitlesInSolutions(SphinxPostTransform):
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
    app.add_post_transform(TranslateExerciseTitlesInSolutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
