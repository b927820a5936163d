"""Bespoke: the bibliography labels its entries as they are cited (a pybtex style plugin, the extension
point sphinxcontrib-bibtex documents).

The bibliography's own pybtex style ``authoryear``: entries labelled as they are cited.

The book cites author-year ("Dao et al., 2022"); pybtex's ``plain`` style labels the list [1],
[2], ..., so a reader of the PDF could not find "Dao et al., 2022" in it by its label, and it
sentence-cases titles ("a chinese textbook"). This style keeps ``plain``'s entries with the titles
as written and labels each entry by its citation: "Last, year", "A and B, year" or "A et al., year"
(a, b, ... where two entries would share a label). The list is alphabetical by author, with a
corporate author ({Gemma Team}) among the G's.
"""
from __future__ import annotations

from collections import Counter

from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle as AuthorYearTitleSorting
from pybtex.style.template import field, sentence


def _last_name(person) -> str:
    return " ".join(name.render_as("text") for name in person.rich_last_names)


class AuthorYearLabels(BaseLabelStyle):
    def format_label(self, entry) -> str:
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [_last_name(p) for p in people]
        who = (names[0] if len(names) == 1 else " and ".join(names) if len(names) == 2
               else f"{names[0]} et al." if names else entry.key)
        return f"{who}, {entry.fields.get('year', 'n.d.')}"

    def format_labels(self, sorted_entries):
        labels = [self.format_label(e) for e in sorted_entries]
        count, seen = Counter(labels), Counter()
        for label in labels:
            if count[label] == 1:
                yield label
            else:
                yield label + chr(ord("a") + seen[label])
                seen[label] += 1


class AuthorYearSorting(AuthorYearTitleSorting):
    """pybtex's author-year-title order, but a corporate author written in braces ({Gemma Team})
    sorts under its first letter, not after Z (the brace's code point)."""

    def person_key(self, person) -> str:
        return super().person_key(person).replace("{", "").replace("}", "")


class AuthorYearStyle(PlainStyle):
    default_label_style = "authoryear"
    default_sorting_style = "authoryear"

    def format_title(self, e, which_field, as_sentence=True):
        title = field(which_field)                 # as written in references.bib
        return sentence[title] if as_sentence else title


register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabels)
register_plugin("pybtex.style.sorting", "authoryear", AuthorYearSorting)
register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)


def setup(app):
    return {"parallel_read_safe": True, "parallel_write_safe": True}
