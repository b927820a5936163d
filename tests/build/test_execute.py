"""bookbuild.execute: pages executed in parallel land in the cache where myst-nb looks them up.

The tool executes pages as myst-nb's cache mode does and stores them under the hash that
jupyter-cache gives the notebook myst-nb reads; these tests run made-up pages in a temporary
cache and look them up again through jupyter-cache, as myst-nb does when Jupyter Book reads them.
"""
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
from bookbuild import execute as execute_pages  # noqa: E402

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A made-up page
"""


def page(folder: pathlib.Path, name: str, code: str) -> pathlib.Path:
    path = folder / f"{name}.md"
    path.write_text(HEADER + f"\n```{{code-cell}} ipython3\n{code}\n```\n")
    return path


def outputs(cache, path: pathlib.Path) -> str:
    _, notebook = cache.merge_match_into_notebook(execute_pages.read_notebook(path))
    return "".join(o.get("text", "") for c in notebook.cells for o in c.get("outputs", []))


def student_toc_file() -> pathlib.Path:
    """The student edition's table of contents, as bookbuild.editions writes it."""
    from bookbuild.editions import Edition, write_files

    edition = Edition(audience="student")
    write_files(edition)
    return ROOT / edition.toc_file


def test_every_page_of_the_toc_is_a_page_of_the_book():
    pages = execute_pages.toc_pages(ROOT / "_toc.yml")
    assert pages[0] == "intro" and len(pages) == len(set(pages))
    assert all((ROOT / (p + ".md")).exists() for p in pages)
    assert {"chapters/01_qkv", "chapters/12_kv_cache", "solutions/sol12_kv_cache", "references"} <= set(pages)
    assert set(execute_pages.SOLO) <= set(pages)
    student = execute_pages.toc_pages(student_toc_file())
    assert "solutions_withheld" in student and not [p for p in student if p.startswith("solutions/")]
    assert set(student) - {"solutions_withheld"} < set(pages)


def test_executed_pages_are_found_in_the_cache_and_failures_are_reported(tmp_path):
    from jupyter_cache import get_cache

    cache = get_cache(str(tmp_path / "cache"))
    good = page(tmp_path, "good", "print(6 * 7)")
    other = page(tmp_path, "other", "import os\nprint(os.getcwd())")
    bad = page(tmp_path, "bad", "raise ValueError('made-up failure')")
    plain = tmp_path / "plain.md"
    plain.write_text("# Not a notebook\n\nNo jupytext header, so myst-nb does not execute it.\n")
    todo = execute_pages.missing([good, other, bad, plain], cache)
    assert todo == [good, other, bad]                        # plain Markdown is not a notebook

    failed = execute_pages.run(todo, cache, jobs=2, timeout=60, solo=(other,))
    assert [f.path for f in failed] == [bad] and "made-up failure" in failed[0].error
    assert outputs(cache, good).strip() == "42"
    assert outputs(cache, other).strip() == str(tmp_path)    # run in the page's own folder
    assert execute_pages.missing([good, other, bad, plain], cache) == [bad]

    good.write_text(good.read_text().replace("6 * 7", "6 * 8"))    # changed code: executed again
    assert execute_pages.missing([good, other], cache) == [good]


def test_pages_run_together_share_the_cores_and_a_page_run_alone_keeps_them(tmp_path, monkeypatch):
    from jupyter_cache import get_cache

    for name in execute_pages.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(execute_pages.os, "cpu_count", lambda: 4)
    cache = get_cache(str(tmp_path / "cache"))
    code = "import os\nprint(os.environ.get('OMP_NUM_THREADS', 'all'))"
    together = [page(tmp_path, f"together{i}", code + f"  # {i}") for i in range(2)]
    alone = page(tmp_path, "alone", code)
    assert execute_pages.run([*together, alone], cache, jobs=2, timeout=60, solo=(alone,)) == []
    assert [outputs(cache, p).strip() for p in together] == ["2", "2"]      # 4 cores, 2 at once
    assert outputs(cache, alone).strip() == "all"


def test_nothing_to_do_is_said_and_succeeds(tmp_path, capsys, monkeypatch):
    from jupyter_cache import get_cache

    calls = []
    monkeypatch.setattr(execute_pages, "run", lambda *a, **k: calls.append(a) or [])
    monkeypatch.setattr(execute_pages, "missing", lambda paths, cache: [])
    config = tmp_path / "config.yml"
    config.write_text(f"execute:\n  cache: {tmp_path / 'cache'}\n  timeout: 5\n")
    get_cache(str(tmp_path / "cache"))
    assert execute_pages.main(["--config", str(config)]) == 0 and not calls
    assert "every page of _toc.yml is in" in capsys.readouterr().out


@pytest.mark.parametrize("student", [False, True], ids=["full", "student"])
def test_the_book_pages_are_read_as_notebooks(student):
    """Every chapter, exercise sheet and solution is a notebook the tool would execute."""
    toc = student_toc_file() if student else ROOT / "_toc.yml"
    pages = [p for p in execute_pages.toc_pages(toc) if p.split("/")[0] in ("chapters", "exercises")]
    assert pages and all(execute_pages.read_notebook(ROOT / (p + ".md")) is not None for p in pages)
