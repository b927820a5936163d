# The two commands a newcomer needs: `make book` and `make test`. Both create .venv on first run.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
JB := $(VENV)/bin/jupyter-book
STAMP := $(VENV)/.installed-stamp
BUILD := _build
JBFLAGS := -W -n --keep-going

.PHONY: help book book-clean student-book test test-fast test-browser lab notebooks assignments grade clean lock gpu-check bench page

help:
	@echo "make book          build the HTML book into $(BUILD)/html (executes every page, cached)"
	@echo "make book-clean    the same after emptying the execution cache"
	@echo "make test          run the whole test suite"
	@echo "make test-browser  drive the built book in headless Chromium"
	@echo "make lab           open JupyterLab; the chapters' .md files open as notebooks"
	@echo "make notebooks     write .ipynb copies of chapters and exercises into notebooks/"
	@echo "make student-book  build the book without solutions into $(BUILD)/student/html"
	@echo "make assignments   otter-grader assignments from exercises (CHAPTERS=\"01 02\", EXERCISES=, POINTS=)"
	@echo "make grade         grade a folder of notebooks: CHAPTER=03 SUBMISSIONS=DIR [TIMEOUT=120]"
	@echo "make page PAGE=chapters/x.md   build one page alone (quick check while writing)"
	@echo "make bench         run the attention benchmark; make gpu-check on a GPU machine"
	@echo "make clean         remove builds (keeps .venv); make distclean also removes .venv"

$(STAMP): pyproject.toml requirements/lock.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet -c requirements/lock.txt -e ".[book,dev,instructor]"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

venv: $(STAMP)

assets: $(STAMP)
	$(PY) tools/vendor_assets.py

# Sphinx always starts clean (an incremental -W build can pass without re-reading pages);
# executed notebooks come from the cache in $(BUILD)/.jupyter_cache, so this stays quick.
book: $(STAMP) assets
	rm -rf $(BUILD)/html $(BUILD)/.doctrees $(BUILD)/jupyter_execute
	$(JB) build . $(JBFLAGS)
	@echo "The book: file://$(CURDIR)/$(BUILD)/html/index.html"

book-clean:  # also re-executes every page (the cache does not notice changes to attnlab)
	rm -rf $(BUILD)/.jupyter_cache
	$(MAKE) book

student-book: $(STAMP) assets
	rm -rf $(BUILD)/student-src/_build/html $(BUILD)/student-src/_build/.doctrees
	$(JB) build . $(JBFLAGS) --toc _toc_student.yml --path-output $(BUILD)/student-src
	rm -rf $(BUILD)/student && mkdir -p $(BUILD)/student && cp -r $(BUILD)/student-src/_build/html $(BUILD)/student/html
	@echo "The student edition: file://$(CURDIR)/$(BUILD)/student/html/index.html"

page: $(STAMP) assets
	$(JB) build $(PAGE) --config _config.yml $(JBFLAGS) --path-output $(BUILD)/pages/$(basename $(notdir $(PAGE)))

test: $(STAMP) assets
	$(VENV)/bin/pytest

test-fast: $(STAMP)
	$(VENV)/bin/pytest -m "not slow and not browser"

test-browser: $(STAMP)
	REQUIRE_BOOK=1 $(VENV)/bin/pytest -m browser

lab: $(STAMP)
	$(VENV)/bin/jupyter lab

notebooks: $(STAMP)
	$(PY) tools/make_notebooks.py

# EXERCISES="ex-masks-causal ex-masks-padding" assigns some exercises of one chapter;
# POINTS="ex-masks-causal=4" weights them (default: one point per check); see instructors.md
assignments: $(STAMP)
	$(PY) tools/make_assignments.py $(CHAPTERS) --exercises "$(EXERCISES)" --points "$(POINTS)"

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
