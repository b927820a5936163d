"""The drawn diagrams: well-formed SVG with alt text in both languages, text that fits, PDF pages, labels that
follow their arguments."""
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

import attnlab as al
from attnlab import diagrams as D
from attnlab import example as ex
from tests.attnlab.checks.test_result import _contrast  # WCAG 2 contrast ratio, as the checkers' notes are tested

NS = "{http://www.w3.org/2000/svg}"
LANGS = ("en", "zh_CN")
LABELS = list(D.DIAGRAMS)
# words that stay as they are in the Chinese pictures: names of hardware, methods and functions
# names and the running example's tokens (data: both editions label them in English, as the prose does)
KEPT = {"HBM", "SRAM", "MHA", "GQA", "MQA", "softmax", "log", "sum", "exp", "Mia", "said", "she", "won"}


def test_twelve_diagrams_with_chapters():
    assert len(LABELS) >= 12 and all(label.startswith("diag-") for label in LABELS)
    assert [d.label for d in D.all_diagrams()] == LABELS
    assert all(re.fullmatch(r"\d\d_[a-z_]+", e.chapter) for e in D.DIAGRAMS.values())


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("label", LABELS)
def test_svg_is_well_formed_with_alt_text(label, lang):
    d = D.DIAGRAMS[label].function()
    root = ET.fromstring(d.svg(lang))
    assert root.tag == NS + "svg" and root.get("role") == "img"
    first = list(root)[0]
    assert first.tag == NS + "title"
    alt = first.text.strip()
    assert alt == root.get("aria-label") == d.alt(lang)
    assert len(alt) > 80 and not re.search(r"\.(svg|png)\b|[0-9a-f]{16}", alt)    # a description, not a name
    if lang == "zh_CN":
        assert re.search(r"[\u4e00-\u9fff]", alt) and alt != d.alt("en")
    assert float(root.get("data-min-text-px")) >= 9.0                     # capitals of 9 px at full width


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("label", LABELS)
def test_no_text_overflows_or_overlaps(label, lang):
    canvas = D.DIAGRAMS[label].function().canvas(lang)
    assert D.check_layout(canvas) == []
    assert canvas.width <= 720 and canvas.texts


@pytest.mark.parametrize("label", LABELS)
def test_chinese_pictures_have_chinese_labels(label):
    canvas = D.DIAGRAMS[label].function().canvas("zh_CN")
    for t in canvas.texts:
        prose = re.sub(r"(?<!\\)\$.*?(?<!\\)\$", "", t.label)                     # math stays as it is
        words = set(re.findall(r"[A-Za-z]{3,}", prose)) - KEPT
        assert not words, f"{label}: English left in {t.label!r}"


def test_text_colours_have_aa_contrast_on_every_background():
    from attnlab.diagrams import _draw
    from attnlab.diagrams.heads import HEADS
    roles = [getattr(_draw, n) for n in ("QUERY", "KEY", "VALUE", "OUTPUT", "SCORE", "INPUT", "GRADIENT", "SRAM",
                                         "REGISTER", "PAD_ROLE")] + list(HEADS)
    for role in roles:
        for background in ("#ffffff", role.fill, role.cell):
            for text in (role.text, _draw.MUTED, _draw.INK):
                assert _contrast(text, background) >= 4.5, (text, background)


def test_measured_widths_match_matplotlib():
    # an independent measure: matplotlib lays out the same DejaVu Sans text
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    from attnlab.diagrams._text import width
    for text in ("causal self-attention", "each token on its own", "HBM: large, slow"):
        w, _h, _d = TextToPath().get_text_width_height_descent(text, FontProperties(family="DejaVu Sans", size=15),
                                                                ismath=False)
        assert width(text, 15) == pytest.approx(w, rel=0.02)
    assert width("因果自注意力", 15) == pytest.approx(6 * 15)                      # CJK: one em each


def test_language_is_restored_and_repr_follows_it():
    d = D.qkv_pipeline()
    zh = d.svg("zh_CN")
    assert al.i18n.get_language() == "en" and "softmax 函数" in zh
    assert d._repr_svg_() == d.svg("en") != zh
    al.set_language("zh_CN")
    try:
        assert d._repr_svg_() == zh
    finally:
        al.set_language("en")


def test_save(tmp_path):
    path = D.transformer_block().save(tmp_path / "block.svg", "zh_CN")
    assert ET.parse(path).getroot().tag == NS + "svg" and "残差" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", LANGS)
def test_rsvg_convert_makes_one_pdf_page_each(tmp_path, lang):
    if shutil.which("rsvg-convert") is None:
        pytest.skip("rsvg-convert is not installed (Debian: librsvg2-bin); the PDF build converts SVG with it")
    for d in D.all_diagrams():
        svg, pdf = tmp_path / f"{d.label}.svg", tmp_path / f"{d.label}.pdf"
        d.save(svg, lang)
        run = subprocess.run(["rsvg-convert", "-f", "pdf", "-o", str(pdf), str(svg)], capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 0 and not run.stderr, f"{d.label}: {run.stderr}"
        data = pdf.read_bytes()
        assert data.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page\b", data)) == 1


def _texts(canvas):
    return [t.label for t in canvas.texts]


def test_pipeline_shows_its_shapes():
    numbers = _texts(D.qkv_pipeline(T=4, S=4, d_model=4, d_k=2, d_v=2).canvas("en"))
    assert "$T × d_k$ = 4 × 2" in numbers and "$S × d_v$ = 4 × 2" in numbers and "$T × S$ = 4 × 4" in numbers
    odd = _texts(D.qkv_pipeline(T=3, S=5, d_model=6, d_k=2, d_v=7).canvas("en"))
    assert "$S × d_k$ = 5 × 2" in odd and "$T × d_v$ = 3 × 7" in odd and "$T × S$ = 3 × 5" in odd
    symbols = _texts(D.qkv_pipeline().canvas("en"))
    assert "$T × d_k$" in symbols and not any(re.search(r"\d × \d", t) for t in symbols)


def test_pipeline_example_shows_the_weights_of_the_pronoun_head():
    texts = _texts(D.qkv_pipeline(example=True).canvas("en"))
    _O, A = ex.attention(ex.PRONOUN)
    assert f"{A[2, 0]:.2f}".lstrip("0") in texts                     # she reads Mia: .85
    assert all(w in texts for w in ex.tokens)


@pytest.mark.parametrize("kinds, reads", [(("full",), 16), (("causal",), 10), (("padding",), 4),
                                          (("full", "causal", "padding"), 30)])
def test_who_reads_whom_draws_one_arrow_per_allowed_read(kinds, reads):
    canvas = D.who_reads_whom(kinds).canvas("en")
    assert len(canvas.arrows) == reads


def test_head_split_and_sharing_follow_their_sizes():
    texts = _texts(D.head_split(n_heads=3, d_model=6, T=5).canvas("en"))
    assert {"$Q_0$", "$Q_1$", "$Q_2$", "$O_2$"} <= set(texts) and "$H × T × d_k$ = 3 × 5 × 2" in texts
    sharing = D.kv_sharing(8, (8, 2, 1)).canvas("en")
    labels = _texts(sharing)
    assert labels.count("$q_{7}$") == 3 and labels.count("$k_{0}$") == 3 and labels.count("$k_{1}$") == 2
    assert "$k_{7}$" in labels and "$k_{2}$" in labels and labels.count("$k_{2}$") == 1


def test_decode_step_shows_the_example_numbers():
    step = ex.decode(ex.PRONOUN)[2]
    texts = _texts(D.decode_step(2).canvas("en"))
    assert [f"{w:.2f}".lstrip("0") for w in step.weights] == [".89", ".05", ".05"]
    assert all(w in texts for w in (".89", ".05", "2.83", ".95"))
    assert "she" in texts and "won" not in texts                    # the cache holds tokens 0 .. t only


def test_tiling_paged_split_and_rope_follow_their_arguments():
    tiling = _texts(D.flash_tiling(4, 4, causal=True, current=(3, 1)).canvas("en"))
    assert "$U_{31}$" in tiling and "$Q_3$" in tiling
    paged = _texts(D.paged_cache(block_size=4, lengths=(10, 6), tables=((5, 1, 6), (3, 0)), n_blocks=8).canvas("en"))
    assert paged.count("free") == 3 and "A2" in paged and "B1" in paged
    assert sum(label == "9" for label in paged) == 2                  # token 9 of A: in its strip and in block 6
    split = _texts(D.split_kv(n_splits=4, S=16).canvas("en"))
    assert [f"chunk {k}" for k in range(4)] == [t for t in split if t.startswith("chunk")]
    rope = _texts(D.rope_rotation(m=1, n=3, shift=3).canvas("en"))
    assert "query at $m = 1$, key at $n = 3$" in rope and "query at $m = 4$, key at $n = 6$" in rope
    assert rope.count("$2θ$") == 2                                     # the same relative angle in both panels


@pytest.mark.parametrize("call", [
    lambda: D.head_split(n_heads=3, d_model=4),
    lambda: D.kv_sharing(8, (3,)),
    lambda: D.flash_tiling(4, 4, causal=True, current=(0, 2)),
    lambda: D.paged_cache(block_size=4, lengths=(10, 6), tables=((5, 1), (3, 0))),
    lambda: D.paged_cache(tables=((5, 1, 6), (5, 0))),
    lambda: D.split_kv(n_splits=5),
    lambda: D.who_reads_whom(("sideways",)),
    lambda: D.decode_step(4),
    lambda: D.rope_rotation(theta_degrees=90),
])
def test_bad_arguments_are_refused(call):
    with pytest.raises(ValueError):
        call()
