"""The book's one entry point: ``python -m bookbuild COMMAND [options]`` (the Makefile's targets call it).

    build [--lang zh_CN] [--audience student] [--format pdf]   one edition (bookbuild.editions)
    books                         both HTML editions at once, the two Sphinx builds side by side
    page PAGE [--lang zh_CN]      one page alone, while writing
    execute [--lang ..] [--audience ..]   an edition's pages into its execution cache
    notebooks [--lang zh_CN] [--solutions] [--out DIR]   .ipynb copies that read like the book
    assignments ... | grade ...   otter assignments and grading (bookbuild.assignments, bookbuild.grade)
    answers [--check]             the numeric answers' fingerprints, from the solution pages
    translations [update|report|check]   extract and merge every catalog; coverage; currency
    catalogs [extract]            attnlab's two catalogs: compile (extract and merge first)
    lint                          the book's lints (bookbuild.lint): visible cells, timings, messages
    vendor                        the JavaScript the HTML book serves, into _vendor/
"""
from __future__ import annotations

import argparse
import sys


def _edition(args):
    from .editions import Edition

    return Edition(args.lang, getattr(args, "audience", "full"), getattr(args, "format", "html"))


def _with_edition(parser, formats=False):
    parser.add_argument("--lang", default="en", choices=["en", "zh_CN"])
    parser.add_argument("--audience", default="full", choices=["full", "student"])
    if formats:
        parser.add_argument("--format", default="html", choices=["html", "pdf"])


def build(args) -> int:
    from .editions import build
    build(_edition(args))
    return 0


def books(args) -> int:
    from .editions import Edition, build
    build(Edition(), Edition("zh_CN"))
    return 0


def page(args) -> int:
    from .editions import Edition, build_page
    return build_page(args.page, Edition(args.lang))


def execute(args) -> int:
    from .editions import execute, prepare
    edition = _edition(args)
    prepare(edition)
    execute(edition)
    return 0


def notebooks(args) -> int:
    from . import notebooks
    from .editions import Edition, execute, write_files
    edition = Edition(args.lang)
    write_files(edition)
    execute(edition)                     # the prose shows what the pages compute
    notebooks.main(["--lang", args.lang, *(["--solutions"] if args.solutions else []),
                    *(["--out", args.out] if args.out else [])])
    return 0


def module(name: str):
    """A command whose module parses its own options (``main(argv)``)."""
    def run(args) -> int:
        import importlib
        result = importlib.import_module(f"bookbuild.{name}").main(args.rest)
        return result if isinstance(result, int) else 0
    return run


def translations(args) -> int:
    from .i18n import catalogs, prose
    if args.action == "update":
        catalogs.main(["extract"])
    return prose.main([args.action])


def catalogs(args) -> int:
    from .i18n import catalogs
    return catalogs.main(args.rest)


def lint(args) -> int:
    from .lint import run_all
    findings = run_all()
    print("\n".join(map(str, findings)) or "every lint passes")
    return 1 if findings else 0


def vendor(args) -> int:
    from . import vendor
    vendor.main()
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bookbuild", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    _with_edition(commands.add_parser("build", help="one edition"), formats=True)
    commands.add_parser("books", help="both HTML editions at once")
    p = commands.add_parser("page", help="one page alone")
    p.add_argument("page")
    p.add_argument("--lang", default="en", choices=["en", "zh_CN"])
    _with_edition(commands.add_parser("execute", help="an edition's pages into its cache"))
    p = commands.add_parser("notebooks", help=".ipynb copies of the chapters and exercises")
    p.add_argument("--lang", default="en", choices=["en", "zh_CN"])
    p.add_argument("--solutions", action="store_true")
    p.add_argument("--out")
    for name in ("assignments", "grade", "answers", "catalogs"):
        commands.add_parser(name, help=f"{name} (options as its module takes them)", add_help=False)
    p = commands.add_parser("translations", help="extract and merge every catalog, coverage, currency")
    p.add_argument("action", nargs="?", default="update", choices=["update", "report", "check"])
    commands.add_parser("lint", help="the book's lints")
    commands.add_parser("vendor", help="the HTML book's JavaScript, into _vendor/")
    args, rest = parser.parse_known_args(argv)
    args.rest = rest
    handlers = {"build": build, "books": books, "page": page, "execute": execute, "notebooks": notebooks,
                "assignments": module("assignments"), "grade": module("grade"), "answers": module("answers"),
                "translations": translations, "catalogs": catalogs, "lint": lint, "vendor": vendor}
    if rest and args.command not in ("assignments", "grade", "answers", "catalogs"):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return handlers[args.command](args) or 0


if __name__ == "__main__":
    sys.exit(main())
