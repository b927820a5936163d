"""The book's translations: the message catalogs of attnlab and of the pages' code (``catalogs``), the
strings the pages' code shows (``page_strings``, which follows names with ``flow``).

The prose of the pages has its own catalogs, one per page in ``locale/zh_CN`` (``tools/translations.py``).
"""
