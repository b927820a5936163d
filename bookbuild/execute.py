"""Execute the book's pages in parallel into an edition's execution cache, before Jupyter Book reads them.

Jupyter Book (myst-nb, execution mode "cache") executes the pages of a book one after another
while it reads them, so a build from an empty cache keeps one core busy and leaves the others
idle. This script executes every page of a table of contents that the edition's cache lacks in a
pool of worker processes, each page as myst-nb would (the notebook myst-nb reads from the page,
the page's folder as working directory, the config's timeout, no errors allowed), and adds the
executed notebooks to the cache; Jupyter Book then finds every page there ("Using cached
notebook"). A page whose code is unchanged is not executed again.

Pages that time things on the machine (:data:`SOLO`: their cells compare measured speeds) run
alone, after the others, so that no other kernel competes with their measurements. The pages run
together share the cores: each kernel gets ``cores // jobs`` threads (OMP_NUM_THREADS and its kin,
unless the environment sets them), and a page run alone keeps them all.

    python -m bookbuild execute [--lang zh_CN] [--audience student] [--jobs N]   (an edition's pages)
    python -m bookbuild.execute [--config _config.yml] [--toc _toc.yml] [--jobs N]

The environment passes to the kernels as it does under Jupyter Book: the Chinese edition runs
this with ``ATTNLAB_LANG=zh_CN``, as it runs ``jupyter-book build``.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import pathlib
import sys
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLO = ("chapters/08_cost", "chapters/09_flash", "chapters/12_kv_cache")   # they time kernels on this machine


def toc_pages(toc: pathlib.Path) -> list[str]:
    """Every page a Jupyter Book table of contents names, root first, in the toc's order."""
    data = yaml.safe_load(toc.read_text())
    pages = [data["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                pages.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
    walk({k: v for k, v in data.items() if k != "root"})
    return list(dict.fromkeys(pages))


def read_notebook(page: pathlib.Path):
    """The notebook myst-nb reads from a MyST page, or None for a page that is not a notebook."""
    from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    text = page.read_text("utf8")
    if not is_myst_markdown_notebook(text):
        return None
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["parse"]
    md_config = MdParserConfig(enable_extensions=set(config["myst_enable_extensions"]))
    return read_myst_markdown_notebook(text, config=md_config, add_source_map=True, path=str(page))


@dataclasses.dataclass
class Executed:
    path: pathlib.Path
    notebook: dict | None
    seconds: float
    error: str | None


def _quiet_kernels() -> None:
    """The kernels' own stderr (ipykernel's start-up warnings) goes nowhere; a failing cell's
    traceback still comes back in :class:`Executed`."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _pool_worker(threads: int) -> None:
    """A worker of the pool: quiet kernels, each with its share of the cores. Two kernels with two
    torch threads each on two cores spend their time waiting for each other's threads."""
    _quiet_kernels()
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(threads))      # the kernel inherits this process's environment


def execute(path: pathlib.Path, timeout: int) -> Executed:
    """Run one page in a fresh kernel, in the page's folder (what myst-nb's cache mode does)."""
    from jupyter_cache.executors.utils import single_nb_execution

    notebook = read_notebook(path)
    result = single_nb_execution(notebook, cwd=str(path.parent), timeout=timeout,
                                 allow_errors=False, meta_override=True)
    error = result.exc_string if result.err is not None else None
    return Executed(path, notebook, result.time, error)


def missing(paths: list[pathlib.Path], cache) -> list[pathlib.Path]:
    """The pages (notebooks) whose code the cache holds no execution of."""
    todo = []
    for path in paths:
        notebook = read_notebook(path)
        if notebook is None:
            continue
        try:
            cache.match_cache_notebook(notebook)
        except KeyError:
            todo.append(path)
    return todo


def known_seconds(caches: list[pathlib.Path]) -> dict[str, float]:
    """How long each page took when it was last executed into any of these caches (by path)."""
    from jupyter_cache import get_cache

    seconds: dict[str, float] = {}
    for folder in caches:
        for record in get_cache(str(folder)).list_cache_records():
            seconds[record.uri] = max(seconds.get(record.uri, 0.0), record.data.get("execution_seconds", 0.0))
    return seconds


def run(paths: list[pathlib.Path], cache, jobs: int, timeout: int, solo: tuple = ()) -> list[Executed]:
    """Execute ``paths`` into ``cache`` (``solo`` ones alone, after the rest); the failures."""
    from jupyter_cache.base import CacheBundleIn

    known = known_seconds([p.parent for p in ROOT.glob("_build/**/.jupyter_cache/global.db")])
    together = sorted((p for p in paths if p not in solo),       # the longest first (then the biggest)
                      key=lambda p: (-known.get(str(p), 0.0), -p.stat().st_size))
    alone = [p for p in paths if p in solo]
    failed = []

    def store(done: Executed) -> None:
        name = done.path.relative_to(ROOT) if done.path.is_relative_to(ROOT) else done.path
        if done.error:
            failed.append(done)
            print(f"  FAILED {name} after {done.seconds:.0f} s", flush=True)
            return
        cache.cache_notebook_bundle(CacheBundleIn(done.notebook, str(done.path),
                                                  data={"execution_seconds": done.seconds}),
                                    check_validity=False, overwrite=True)
        print(f"  {name}: {done.seconds:.0f} s", flush=True)

    if together:
        threads = max(1, (os.cpu_count() or 1) // max(1, jobs))
        with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, jobs), initializer=_pool_worker,
                                                    initargs=(threads,)) as pool:
            for future in concurrent.futures.as_completed([pool.submit(execute, p, timeout) for p in together]):
                store(future.result())
    for path in alone:
        saved = os.dup(2)
        try:
            _quiet_kernels()                      # this process's stderr is the kernel's too
            done = execute(path, timeout)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        store(done)
    return failed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="_config.yml", help="the edition's Jupyter Book config")
    parser.add_argument("--toc", default="_toc.yml", help="the table of contents whose pages to execute")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="pages run at once")
    args = parser.parse_args(argv)
    from jupyter_cache import get_cache

    execute_config = yaml.safe_load((ROOT / args.config).read_text())["execute"]
    cache = get_cache(str(ROOT / execute_config["cache"]))
    todo = missing([ROOT / (page + ".md") for page in toc_pages(ROOT / args.toc)], cache)
    if not todo:
        print(f"execute_pages: every page of {args.toc} is in {execute_config['cache']}")
        return 0
    solo = tuple(ROOT / (page + ".md") for page in SOLO)
    print(f"execute_pages: {len(todo)} pages to execute into {execute_config['cache']} on {args.jobs} "
          f"workers ({sum(p in solo for p in todo)} of them alone)", flush=True)
    start = time.perf_counter()
    failed = run(todo, cache, args.jobs, int(execute_config.get("timeout", 30)), solo)
    print(f"execute_pages: done in {time.perf_counter() - start:.0f} s", flush=True)
    for done in failed:
        print(f"\n{done.path} failed:\n{done.error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
