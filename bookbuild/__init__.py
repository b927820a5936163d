"""The book's build: editions, execution, translations, notebooks, assignments, and the lints of its pages.

Not part of ``attnlab`` (which students install): it lives beside it at the repository's root and is
imported normally from there (``python -m bookbuild ...``, the tests, the pages that show the build).
"""
