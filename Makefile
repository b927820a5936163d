# The two commands a newcomer needs: `make book` and `make test`. Both create .venv on first run.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
JB := $(VENV)/bin/jupyter-book
STAMP := $(VENV)/.installed-stamp
BUILD := _build
JBFLAGS := -W -n --keep-going
EXECUTE := $(PY) tools/execute_pages.py
# The students' language: `make notebooks LANG=zh_CN` (or BOOK_LANG=zh_CN). Only a LANG given on
# make's command line counts: the environment's LANG is the locale (C.UTF-8, en_US.UTF-8), never a
# book language. The recipes then run with LANG=C.UTF-8, a locale that exists.
ifeq ($(origin LANG),command line)
BOOK_LANG := $(LANG)
override LANG := C.UTF-8
endif
BOOK_LANG ?=
ifneq ($(filter-out en zh_CN,$(BOOK_LANG)),)
$(error LANG=$(BOOK_LANG): the book's languages are zh_CN and en (the default, LANG left out))
endif
LANG_FLAG := $(if $(BOOK_LANG),--lang $(BOOK_LANG))

.PHONY: help book book-zh books student-book-zh translations book-clean student-book pdf pdf-zh test test-fast test-browser test-pdf lab notebooks assignments grade clean lock gpu-check bench page

help:
	@echo "make book          build the HTML book into $(BUILD)/html (executes every page, cached)"
	@echo "make book-zh       build the Chinese edition into $(BUILD)/zh/html (catalogs in locale/zh_CN)"
	@echo "make books         both editions at once (the two HTML builds side by side)"
	@echo "make student-book-zh  the Chinese edition without solutions, in $(BUILD)/zh/student/html"
	@echo "make translations  extract the English text (prose, and the pages' tr() strings into pages.po), merge it into the catalogs, print the coverage"
	@echo "make book-clean    the same after emptying the execution cache"
	@echo "make test          run the whole test suite"
	@echo "make test-browser  drive the built book in headless Chromium"
	@echo "make test-pdf      check the built PDF (titles, references, fonts, explorer pictures)"
	@echo "make lab           open JupyterLab; the chapters' .md files open as notebooks"
	@echo "make notebooks     write .ipynb copies of chapters and exercises into notebooks/"
	@echo "                   LANG=zh_CN: Chinese ones into notebooks/zh_CN/ (LANG counts on the command line only)"
	@echo "make student-book  build the book without solutions into $(BUILD)/student/html"
	@echo "make pdf           the book as a PDF, $(BUILD)/pdf/attention-computed.pdf (xelatex; before make book)"
	@echo "make pdf-zh        the Chinese PDF, $(BUILD)/pdf/attention-computed-zh.pdf (before make book-zh)"
	@echo "make assignments   otter-grader assignments from exercises (CHAPTERS=\"01 02\", EXERCISES=, POINTS=)"
	@echo "                   LANG=zh_CN: Chinese student notebooks, into assignments/zh_CN/"
	@echo "make grade         grade a folder of notebooks: CHAPTER=03 SUBMISSIONS=DIR [TIMEOUT=120]"
	@echo "make page PAGE=chapters/x.md   build one page alone (quick check while writing)"
	@echo "make bench         run the attention benchmark; make gpu-check on a GPU machine"
	@echo "make clean         remove builds (keeps .venv); make distclean also removes .venv"

$(STAMP): pyproject.toml requirements/lock.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet -c requirements/lock.txt -e ".[book,dev,instructor]"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	$(PY) -m bookbuild.i18n.catalogs
	touch $(STAMP)

venv: $(STAMP)

assets: $(STAMP)
	$(PY) tools/vendor_assets.py
	$(PY) -m bookbuild.i18n.catalogs

# Pages the execution cache lacks run first, several at once (tools/execute_pages.py); Jupyter
# Book then finds every page in the cache. Sphinx always starts clean (an incremental -W build can pass without re-reading pages);
# executed notebooks come from the cache in $(BUILD)/.jupyter_cache, so this stays quick.
book: $(STAMP) assets
	rm -rf $(BUILD)/html $(BUILD)/.doctrees $(BUILD)/jupyter_execute
	$(EXECUTE)
	$(JB) build . $(JBFLAGS)
	@echo "The book: file://$(CURDIR)/$(BUILD)/html/index.html"

# The Chinese edition: the same sources, translated through the catalogs in locale/zh_CN; pages
# execute with ATTNLAB_LANG=zh_CN into their own cache (attnlab's messages and labels differ).
book-zh: $(STAMP) assets
	$(PY) tools/edition_config.py zh
	rm -rf $(BUILD)/zh/_build/html $(BUILD)/zh/_build/.doctrees $(BUILD)/zh/_build/jupyter_execute
	ATTNLAB_LANG=zh_CN $(EXECUTE) --config _config_zh.yml --toc _toc_zh.yml
	ATTNLAB_LANG=zh_CN $(JB) build . $(JBFLAGS) --config _config_zh.yml --toc _toc_zh.yml --path-output $(BUILD)/zh
	rm -rf $(BUILD)/zh/html && cp -r $(BUILD)/zh/_build/html $(BUILD)/zh/html
	@echo "中文版: file://$(CURDIR)/$(BUILD)/zh/html/index.html"

# Both editions at once, as CI builds them: each edition's pages execute on every core, then the two
# Sphinx builds (one core each) run side by side; the Chinese build's log is shown when it ends.
books: $(STAMP) assets
	$(PY) tools/edition_config.py zh
	rm -rf $(BUILD)/html $(BUILD)/.doctrees $(BUILD)/jupyter_execute
	rm -rf $(BUILD)/zh/_build/html $(BUILD)/zh/_build/.doctrees $(BUILD)/zh/_build/jupyter_execute
	$(EXECUTE)
	ATTNLAB_LANG=zh_CN $(EXECUTE) --config _config_zh.yml --toc _toc_zh.yml
	mkdir -p $(BUILD)/zh
	{ ATTNLAB_LANG=zh_CN $(JB) build . $(JBFLAGS) --config _config_zh.yml --toc _toc_zh.yml \
	    --path-output $(BUILD)/zh > $(BUILD)/zh/build.log 2>&1 & } ; zh=$$! ; \
	  EDITION_TWIN=building $(JB) build . $(JBFLAGS) ; en=$$? ; wait $$zh ; zhrc=$$? ; \
	  echo "--- the Chinese edition's build (exit $$zhrc):" ; tail -n 40 $(BUILD)/zh/build.log ; \
	  test $$en = 0 && test $$zhrc = 0
	rm -rf $(BUILD)/zh/html && cp -r $(BUILD)/zh/_build/html $(BUILD)/zh/html
	@echo "The book: file://$(CURDIR)/$(BUILD)/html/index.html"
	@echo "中文版: file://$(CURDIR)/$(BUILD)/zh/html/index.html"

student-book-zh: $(STAMP) assets
	$(PY) tools/edition_config.py zh
	rm -rf $(BUILD)/zh/student-src/_build/html $(BUILD)/zh/student-src/_build/.doctrees
	ATTNLAB_LANG=zh_CN $(EXECUTE) --config _config_zh.yml --toc _toc_student_zh.yml
	ATTNLAB_LANG=zh_CN $(JB) build . $(JBFLAGS) --config _config_zh.yml --toc _toc_student_zh.yml --path-output $(BUILD)/zh/student-src
	rm -rf $(BUILD)/zh/student && mkdir -p $(BUILD)/zh/student && cp -r $(BUILD)/zh/student-src/_build/html $(BUILD)/zh/student/html
	@echo "中文学生版: file://$(CURDIR)/$(BUILD)/zh/student/html/index.html"

translations: $(STAMP)
	$(PY) -m bookbuild.i18n.catalogs extract
	$(PY) tools/translations.py update

book-clean:  # also re-executes every page (the cache does not notice changes to attnlab)
	rm -rf $(BUILD)/.jupyter_cache
	$(MAKE) book

student-book: $(STAMP) assets
	rm -rf $(BUILD)/student-src/_build/html $(BUILD)/student-src/_build/.doctrees
	$(EXECUTE) --toc _toc_student.yml
	$(JB) build . $(JBFLAGS) --toc _toc_student.yml --path-output $(BUILD)/student-src
	rm -rf $(BUILD)/student && mkdir -p $(BUILD)/student && cp -r $(BUILD)/student-src/_build/html $(BUILD)/student/html
	@echo "The student edition: file://$(CURDIR)/$(BUILD)/student/html/index.html"

# The PDF, with xelatex and Debian's TeX packages (the list is in .ci/run). It shares the execution
# cache with `make book`: whichever runs first executes the pages, the other reads them. Run it
# before `make book`: the HTML book links and ships the PDF only if it exists when the HTML is
# built (_ext/pdf_download.py), so an HTML book without a PDF has no dead link.
# A Chinese edition gets `pdf-zh` the same way from its generated config (a copy of _config.yml
# with latex_documents.targetname attention-computed-zh.tex, the zh caption names in
# latex_elements and pdf_download_file _build/pdf/attention-computed-zh.pdf), built with
# `--config <that file> --path-output $(BUILD)/zh --builder pdflatex` and copied to $(BUILD)/pdf/.
pdf: $(STAMP)
	rm -rf $(BUILD)/latex $(BUILD)/.doctrees $(BUILD)/jupyter_execute
	mkdir -p _vendor   # html_static_path names it (warning under -W if absent); the PDF needs none of its JS
	$(EXECUTE)
	LATEXMKOPTS=-silent $(JB) build . $(JBFLAGS) --builder pdflatex \
	  || { grep -a -A4 '^!' $(BUILD)/latex/attention-computed.log | head -40; exit 1; }   # -silent: errors are in the log
	mkdir -p $(BUILD)/pdf && cp $(BUILD)/latex/attention-computed.pdf $(BUILD)/pdf/
	@echo "The PDF: $(CURDIR)/$(BUILD)/pdf/attention-computed.pdf"

# The Chinese PDF: the same recipe from the Chinese edition's config and execution cache.
pdf-zh: $(STAMP)
	$(PY) tools/edition_config.py zh
	$(PY) -m bookbuild.i18n.catalogs
	rm -rf $(BUILD)/zh/_build/latex $(BUILD)/zh/_build/.doctrees $(BUILD)/zh/_build/jupyter_execute
	mkdir -p _vendor
	ATTNLAB_LANG=zh_CN $(EXECUTE) --config _config_zh.yml --toc _toc_zh.yml
	ATTNLAB_LANG=zh_CN LATEXMKOPTS=-silent $(JB) build . $(JBFLAGS) --config _config_zh.yml --toc _toc_zh.yml \
	  --builder pdflatex --path-output $(BUILD)/zh \
	  || { grep -a -A4 '^!' $(BUILD)/zh/_build/latex/attention-computed-zh.log | head -40; exit 1; }
	mkdir -p $(BUILD)/pdf && cp $(BUILD)/zh/_build/latex/attention-computed-zh.pdf $(BUILD)/pdf/
	@echo "中文 PDF: $(CURDIR)/$(BUILD)/pdf/attention-computed-zh.pdf"

# One page, as the book builds it, through a table of contents of that page alone (Jupyter Book's
# own page mode reads every file beside the page, for a page at the top the virtual environment
# too). Links to other pages warn: they are not in this build.
PAGE_OUT = $(BUILD)/pages/$(basename $(notdir $(PAGE)))
page: $(STAMP) assets
	@test -f "$(PAGE)" || { echo "make page PAGE=chapters/01_qkv.md: no page $(PAGE)"; exit 2; }
	mkdir -p $(PAGE_OUT)
	printf 'format: jb-book\nroot: %s\n' "$(basename $(PAGE))" > $(PAGE_OUT)/_toc.yml
	$(JB) build . --config _config.yml --toc $(PAGE_OUT)/_toc.yml $(JBFLAGS) --path-output $(PAGE_OUT)

test: $(STAMP) assets
	$(VENV)/bin/pytest

test-fast: $(STAMP)
	$(VENV)/bin/pytest -m "not slow and not browser"

test-browser: $(STAMP)
	REQUIRE_BOOK=1 $(VENV)/bin/pytest -m browser

test-pdf: $(STAMP)
	REQUIRE_PDF=1 $(VENV)/bin/pytest tests/test_pdf.py tests/test_pdf_zh.py

lab: $(STAMP)
	$(VENV)/bin/jupyter lab

notebooks: $(STAMP)
	$(PY) tools/make_notebooks.py $(LANG_FLAG)

# EXERCISES="ex-masks-causal ex-masks-padding" assigns some exercises of one chapter;
# POINTS="ex-masks-causal=4" weights them (default: one point per check); see instructors.md
assignments: $(STAMP)
	$(PY) tools/make_assignments.py $(CHAPTERS) --exercises "$(EXERCISES)" --points "$(POINTS)" $(LANG_FLAG)

# Writes SUBMISSIONS/gradebook.csv and SUBMISSIONS/feedback/<student>.md; TIMEOUT is per notebook,
# QUESTION_TIMEOUT per cell or question (defaults: those given to make assignments, 120 and 30 s);
# JOBS notebooks at a time (default: half the cores, at most 4)
grade: $(STAMP)
	@test -n "$(CHAPTER)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade CHAPTER=03 SUBMISSIONS=DIR [TIMEOUT=120]"; exit 2; }
	$(PY) tools/grade.py --chapter $(CHAPTER) --submissions "$(SUBMISSIONS)" \
	  $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(QUESTION_TIMEOUT),--question-timeout $(QUESTION_TIMEOUT)) \
	  $(if $(JOBS),--jobs $(JOBS))

bench: $(STAMP)
	$(PY) benchmarks/attention.py

gpu-check: $(STAMP)
	bash benchmarks/gpu_check.sh

lock:
	$(PY) -m pip freeze --exclude-editable | grep -v '^attnlab' | sed 's/^torch==\(.*\)+cpu/torch==\1/' > requirements/lock.body
	{ sed -n '1,3p' requirements/lock.txt; cat requirements/lock.body; } > requirements/lock.new && mv requirements/lock.new requirements/lock.txt && rm requirements/lock.body

clean:
	rm -rf $(BUILD) notebooks assignments .pytest_cache

distclean: clean
	rm -rf $(VENV) _vendor
