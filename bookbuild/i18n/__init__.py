"""The book's translations: the message catalogs of attnlab and of the pages' code (``catalogs``), the
strings the pages' code shows (``page_strings``, which follows names with ``flow``); the catalogs of
the pages' prose, one per page in ``locale/zh_CN`` (``prose``), the checks a translated paragraph
passes (``checks``), and a page's Markdown translated through its catalog (``markdown``).
"""
