# Neural Attention course — the commands a learner, an instructor and a maintainer need.
#   make book        build the HTML book (executes every notebook)        → _build/html/index.html
#   make test        everything: lint, unit/property/parity tests, book (-W), nbval, browser test
#   make lab         JupyterLab on the book
#   make assignment CHAPTERS=1,3   student notebooks, answer key and a book edition under assignments/
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

.PHONY: env book test lab assignment vendor system clean

env: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	@touch $@

system:            ## npm (offline book assets) and a browser (browser test), from the OS when missing
	@bash tools/ensure_system.sh $(BIN)

vendor: $(STAMP) system
	$(BIN)/python tools/vendor_static.py

book: $(STAMP) vendor
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo "Book built: $(abspath _build/html/index.html)"

test: export COURSE_SCALE = quick
test: $(STAMP) system
	$(BIN)/ruff check .
	$(MAKE) --no-print-directory book
	$(BIN)/python -m pytest --nbval-lax --nbval-current-env --nbval-cell-timeout=900 tests book

lab: $(STAMP)
	$(BIN)/jupyter lab book/

assignment: $(STAMP)
	$(BIN)/course-assign --chapters $(CHAPTERS) --out assignments

clean:
	rm -rf _build assignments .pytest_cache
