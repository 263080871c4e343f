# Neural Attention course — the commands a learner, an instructor and a maintainer need.
#   make book        build the HTML book (executes every notebook)        → _build/html/index.html
#   make test        everything: lint, unit/property/parity tests, book (-W), nbval, browser test
#   make test CHAPTERS=3   the same for some chapters: the shared tests, their tests and notebooks, a book of them
#   make lint        ruff, notebooks stored without outputs, the chapters' layer cells, mypy (as pre-commit)
#   make lab         JupyterLab on the book
#   make assignment CHAPTERS=1,3   student notebooks, answer key and a book edition under assignments/
#   make bench       timed comparisons of every chapter → attention_course/benchmarks/<machine>.json (not part of make test)
#   make robustness  every chapter, quick profile, both frameworks, 5 seeds: which claims fail (not in make test)
#   make probes      every bad-input probe, both frameworks → tools/probes/outcomes.md (not part of make test)
#   make colab-check the notebooks in an environment pinned to Colab's versions (constraints/colab.txt)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CHAPTERS ?= all

# The offline copies of the datasets, when this repository sits beside them (as on CI).
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)/SOURCES.md),)
export COURSE_DATA_DIR ?= $(SHARED_DATA)
endif
# The offline copy of the pretrained BERT of Chapter 9, likewise.
SHARED_MODELS := $(abspath ../shared/models)
ifneq ($(wildcard $(SHARED_MODELS)/SOURCES.md),)
export COURSE_MODEL_DIR ?= $(SHARED_MODELS)
endif

# The book never shows progress bars (they are for a live kernel), nor the `name = value` lines of ac.glue (its
# prose shows the values).
export COURSE_PROGRESS ?= 0
# the book and the tests run both frameworks (a live kernel runs PyTorch unless told otherwise)
export COURSE_FRAMEWORKS ?= both
export COURSE_GLUE_ECHO ?= 0
# nor the "[cell skipped: …]" notes of cells whose model or data is absent (the prose says what they need)
export COURSE_SKIP_ECHO ?= 0
NBVAL := --nbval-lax --nbval-current-env --nbval-cell-timeout=900

.PHONY: env book test lint lab assignment vendor system clean bench robustness colab-check probes

env: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python tools/install_requirements.py $(BIN) -r requirements.txt
	$(BIN)/python tools/install_requirements.py $(BIN) --no-deps -e .
	@touch $@

system:            ## npm (offline book assets) and a browser (browser test), from the OS when missing
	@bash tools/ensure_system.sh $(BIN) all

# the book's JavaScript, served with it: npm only (the browser is the browser test's, `make test` installs it)
vendor: $(STAMP)
	@bash tools/ensure_system.sh $(BIN) npm
	$(BIN)/python tools/vendor_static.py

# BOOK_SOURCE: the folder holding _config.yml and _toc.yml (make test CHAPTERS=… builds _build/subset)
BOOK_SOURCE ?= .
# tools/execute_book.py first runs the notebooks the execution cache lacks, one kernel per core (BOOK_JOBS=…),
# while the book's JavaScript installs (only the rendering needs it); jupyter-book then renders them from the cache.
book: $(STAMP)
	$(MAKE) --no-print-directory vendor & vendor=$$!; \
	$(BIN)/python tools/execute_book.py $(BOOK_SOURCE); executed=$$?; \
	wait $$vendor && exit $$executed
	$(BIN)/jupyter-book build $(BOOK_SOURCE) -W -n --keep-going
	@echo "Book built: $(abspath $(BOOK_SOURCE)/_build/html/index.html)"

# Each notebook runs once: nbval executes it (with the unit tests, on two workers: a notebook file stays on one
# worker), tools/notebook_cache.py stores the executed copy in the book's execution cache, the book build
# renders it from there, then the browser test reads the built book.
# Each phase's wall time is printed as it ends and again, all together, at the end (_build/test-times.txt).
# CHAPTERS=1,3 (or 2-4): the shared tests and those chapters' tests and notebooks (a test belongs to a chapter by its
# `chapter` mark or the chapter notebook it takes, tests/conftest.py), and a book of the introduction, those chapters
# and the references (tools/subset_book.py writes it into _build/subset): a quicker check while writing a chapter.
# CI runs all of them.
TEST_BOOK := $(if $(filter-out all,$(CHAPTERS)),_build/subset,.)
test: export COURSE_PROFILE = quick
test: export COURSE_TEST_CHAPTERS = $(CHAPTERS)
test: export TEST_TIMES = $(abspath _build/test-times.txt)
test: $(STAMP) system
	@mkdir -p _build && : > $(TEST_TIMES)
	@echo book > _build/test-notebooks.txt
	$(if $(filter-out all,$(CHAPTERS)),$(BIN)/python tools/subset_book.py $(CHAPTERS) > _build/test-notebooks.txt)
	bash tools/timed.sh lint $(MAKE) --no-print-directory lint
	bash tools/timed.sh "unit tests and notebooks" $(BIN)/python -m pytest -n 2 --dist loadfile -p tools.notebook_cache -m "not browser" $(NBVAL) tests $$(cat _build/test-notebooks.txt)
	bash tools/timed.sh book $(MAKE) --no-print-directory book BOOK_SOURCE=$(TEST_BOOK)
	COURSE_BOOK_HTML=$(abspath $(TEST_BOOK)/_build/html) bash tools/timed.sh "browser tests" $(BIN)/python -m pytest -m browser tests
	@echo "make test, wall time per phase:" && cat $(TEST_TIMES)

lint: $(STAMP)     ## what .pre-commit-config.yaml runs: ruff, stripped notebooks, layer cells, mypy
	$(BIN)/ruff check .
	$(BIN)/python tools/stripped.py
	$(BIN)/python tools/layer_cells.py
	$(BIN)/mypy

bench: $(STAMP)    ## timed comparisons → attention_course/benchmarks/<machine>.json (commit it; the chapters quote it)
	$(BIN)/python tools/bench.py

robustness: $(STAMP)   ## every chapter, quick profile, both frameworks, seeds 0-4; prints the failed claims
	$(BIN)/python tools/robustness.py $(if $(SEEDS),--seeds $(SEEDS)) $(if $(filter-out all,$(CHAPTERS)),--chapters $(CHAPTERS))

colab-check:         ## the notebooks with Colab's package versions (constraints/colab.txt), one framework each (COLAB_FRAMEWORKS=swapped|both)
	bash tools/colab_check.sh

lab: $(STAMP)
	$(BIN)/jupyter lab book/

assignment: $(STAMP)
	$(BIN)/course-assign --chapters $(CHAPTERS) --out assignments --force

clean:             ## build outputs only: assignments/ may hold an instructor's own files, so make never removes it
	rm -rf _build .pytest_cache

probes: $(STAMP)   ## the bad-input probes of tools/probes/, both frameworks, into tools/probes/outcomes.md
	$(BIN)/python tools/probe_inputs.py --write
