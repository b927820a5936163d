"""attnlab.edge: in a Chinese kernel a page's plain English code prints, displays and draws Chinese (print,
Markdown, pandas tables, every text of a figure, glue); in English nothing is installed and nothing changes."""
import io
import re
from contextlib import redirect_stdout
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import polib  # noqa: E402
import pytest  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.display import Markdown  # noqa: E402

from attnlab import display, edge, i18n  # noqa: E402

PAGES_PO = Path(i18n.LOCALE_DIR) / "zh_CN" / "LC_MESSAGES" / "pages.po"
CJK = re.compile(r"[\u4e00-\u9fff]")


def messages(n: int) -> list[tuple[str, str]]:
    """n (English, Chinese) messages of the pages catalog made of plain words, read with polib."""
    found = [(e.msgid, e.msgstr) for e in polib.pofile(str(PAGES_PO))
             if re.fullmatch(r"[a-z][a-z ]+[a-z]", e.msgid) and CJK.search(e.msgstr) and not e.obsolete]
    return found[:n]


@pytest.fixture
def chinese():
    i18n.set_language("zh_CN")
    yield
    i18n.set_language("en")
    plt.close("all")


@pytest.fixture
def shell():
    shell = InteractiveShell.instance()
    saved = shell.user_ns.pop("print", None)
    yield shell
    shell.user_ns.pop("print", None)
    if saved is not None:
        shell.user_ns["print"] = saved


def printed(*args, **kwargs) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        edge.edition_print(*args, **kwargs)
    return out.getvalue()


def test_print_translates_each_string_argument_and_leaves_values_alone(chinese):
    (en1, zh1), (en2, zh2) = messages(2)
    assert printed(en1, 3.5, en2, sep=" | ") == f"{zh1} | 3.5 | {zh2}\n"
    assert printed("no page writes this", [1, 2]) == "no page writes this [1, 2]\n"


def test_in_english_print_is_print():
    (en, _zh), = messages(1)
    assert printed(en, 1) == f"{en} 1\n"


def test_install_gives_a_chinese_kernel_print_markdown_and_tables(chinese, shell):
    (en1, zh1), (en2, zh2) = messages(2)
    assert edge.install(shell)
    assert shell.user_ns["print"] is edge.edition_print
    formatters = shell.display_formatter.formatters
    assert formatters["text/markdown"](Markdown(en1)) == zh1
    table = pd.DataFrame({en1: [1, 2]}, index=[en2, "float32"])
    html = formatters["text/html"](table)
    assert zh1 in html and zh2 in html and "float32" in html and en1 not in html
    assert zh1 in formatters["text/plain"](table)


def test_in_english_install_installs_nothing(shell):
    assert not edge.install(shell)
    assert "print" not in shell.user_ns


def test_every_text_of_a_figure_is_translated_when_it_is_drawn(chinese):
    (title, zh_title), (label, zh_label), (tick, zh_tick) = messages(3)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label=label)
    ax.set_title(title)
    ax.set_xticks([0, 1], [tick, "0.5"])
    ax.set_yticks([0, 1], [0, 1])                          # labels that are not strings
    ax.legend()
    ax.annotate(title, (0.5, 0.5))
    edge.translate_figure(fig)
    edge.translate_figure(fig)                          # twice: the same
    fig.canvas.draw()
    assert ax.get_title() == zh_title and ax.texts[0].get_text() == zh_title
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [zh_label]
    assert [t.get_text() for t in ax.get_xticklabels()] == [zh_tick, "0.5"]


def test_in_english_a_figure_is_left_alone():
    (title, _zh), = messages(1)
    fig, ax = plt.subplots()
    ax.set_title(title)
    edge.translate_figure(fig)
    assert ax.get_title() == title
    plt.close(fig)


def test_glue_gives_the_prose_text_in_the_editions_language(chinese, monkeypatch):
    import myst_nb

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: glued.update({name: (value, display)}))
    (en, zh), = messages(1)
    display.glue("a_text", en)
    display.glue("a_number", 0.25)
    assert glued == {"a_text": (zh, False), "a_number": (0.25, False)}
