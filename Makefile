# The book's two entry points (README):
#   make book   build the HTML book into _build/html, executing every chapter (FAST scale; BOOK_FAST=0 for paper scale)
#   make test   unit tests of lib (native and portable CPU kernels), every chapter executed by nbmake, the HTML rendered with -W, checks on it, and a
#               second execution of the first chapters that must reproduce their claims exactly
# Both create the virtual environment .venv from requirements.txt on first use.

PYTHON     ?= python3
VENV       := .venv
BIN        := $(VENV)/bin
STAGE      := build/book
HTML       := _build/html
JOBS       ?= 2
BOOK_FAST  ?= 1
# At a seed offset (BOOK_SEED=k, k > 0) every committed study a chapter reads is recomputed: a FAST chapter then
# takes up to OFFSET_TIMEOUT/2 on 2 cores (README), and its progress goes to the console (lib.core.console; pytest -s).
OFFSET         := $(filter-out 0,$(BOOK_SEED))
OFFSET_TIMEOUT ?= 4800
NB_TIMEOUT ?= $(if $(filter 0 false no off,$(BOOK_FAST)),36000,$(if $(OFFSET),$(OFFSET_TIMEOUT),900))
NB_CONSOLE := $(if $(OFFSET),-s,)

export BOOK_FAST
export OMP_NUM_THREADS := 1
export BOOK_PROGRESS := 0
export BOOK_WIDGETS := 0
export BOOK_CONSOLE := $(if $(OFFSET),1,0)
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: book test venv unit format sync sync-check stage execute ledger accept-ledger html check-html determinism offset-check robustness smoke-paper chromium check-browser clean

book: venv stage execute ledger html
	@echo "book: $(HTML)/index.html"

test: venv unit stage execute ledger html check-html check-browser determinism offset-check smoke-paper
	@echo "all tests passed"

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade-strategy only-if-needed -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# Twice: with this CPU's own float kernels and with torch's portable ones (ATEN_CPU_CAPABILITY=default), since float
# results differ between machines and no test may pass by one machine's rounding.
unit: venv
	MPLBACKEND=Agg $(BIN)/python -m pytest -q -n $(JOBS) tests
	MPLBACKEND=Agg ATEN_CPU_CAPABILITY=default $(BIN)/python -m pytest -q -n $(JOBS) tests

format: venv
	$(BIN)/ruff format lib tests tools benchmarks

sync: venv
	$(BIN)/python tools/bookctl.py sync

sync-check: venv
	$(BIN)/python tools/bookctl.py sync --check

stage: venv
	$(BIN)/python tools/bookctl.py stage $(STAGE)

# Executes every staged chapter once (nbmake writes the outputs back for the ledger and the HTML).
execute: venv
	$(BIN)/python -m pytest -q --nbmake --overwrite -n $(JOBS) --nbmake-timeout=$(NB_TIMEOUT) --durations=0 $(NB_CONSOLE) \
		$(STAGE)/chapters
	@[ -z "$(OFFSET)" ] || $(BIN)/python tools/bookctl.py times $(STAGE)

# The ledger, and every claim's status compared with the committed snapshot data/ledger.json (fails on a change).
ledger: venv
	$(BIN)/python tools/bookctl.py ledger $(STAGE) --check data/ledger.json

# After a build whose statuses changed on purpose: rewrite the snapshot (commit the diff with the reason).
accept-ledger: venv
	$(BIN)/python tools/bookctl.py ledger $(STAGE) --accept data/ledger.json

# Not part of CI (over an hour on 2 cores): every FAST chapter at four other seed offsets and with torch's portable CPU
# kernels, each in its own stage and results cache; records each claim's status per run in data/robustness.json
# (commit it). A claim whose status changes in any run is fragile and cannot be reproduced.
# ROBUST_CHAPTERS="06_sparse_patterns 07_token_mixers" redoes only those chapters in every run (merged into the file).
ROBUST_RUNS ?= BOOK_SEED=1 BOOK_SEED=2 BOOK_SEED=3 BOOK_SEED=4 ATEN_CPU_CAPABILITY=default ATEN_CPU_CAPABILITY=avx2
ROBUST_CHAPTERS ?=
robustness: venv
	@for run in $(ROBUST_RUNS); do \
	  name=$$(echo $$run | tr '=' '-'); dir=build/robust/$$name; \
	  echo "robustness run $$run -> $$dir"; \
	  $(BIN)/python tools/bookctl.py stage $$dir >/dev/null || exit 1; \
	  targets="$$dir/chapters"; [ -z "$(ROBUST_CHAPTERS)" ] || targets=$$(for c in $(ROBUST_CHAPTERS); do echo $$dir/chapters/$$c.ipynb; done); \
	  case $$run in BOOK_SEED=*) timeout=$(OFFSET_TIMEOUT); console="-s"; on=1;; *) timeout=$(NB_TIMEOUT); console=; on=0;; esac; \
	  env $$run BOOK_CONSOLE=$$on BOOK_CACHE_DIR=$(CURDIR)/build/robust/cache-$$name $(BIN)/python -m pytest -q --nbmake \
	    --overwrite -n $(JOBS) --nbmake-timeout=$$timeout $$console $$targets; \
	  $(BIN)/python tools/bookctl.py times $$dir; \
	  env $$run $(BIN)/python tools/bookctl.py robustness $$dir --label "$$run" \
	    $(if $(ROBUST_CHAPTERS),--merge --only $(ROBUST_CHAPTERS)) || exit 1; \
	done

# The smoke run of the paper scale (lib.core.smoke): every chapter with BOOK_FAST=0 and its paper-scale configurations,
# steps, seeds and token budgets cut by SMOKE, so that every paper-scale line executes; no claim is judged, nothing is
# rendered, and it has its own stage and results cache. Widgets are on, as in Jupyter and Colab.
# SMOKE_AFTER reads a study another chapter computes (chapter 8 reads chapter 6's context study): it runs after the
# others, so that it loads the study from the smoke cache instead of computing it a second time at the same moment.
# (pytest-xdist's --dist loadgroup would do this, but under pytest 9.2 with xdist 3.8 it groups nothing: xdist renames
# item._nodeid, which pytest 9 no longer reads.)
# SMOKE_ORDER lists the others in the order the workers take them. pytest-xdist's load scheduler hands each of two
# workers two consecutive notebooks first, and a worker busy with a long notebook gets no more until its own are done:
# chapter 6 (the slowest, about 3.5 minutes) comes first with the quickest (chapter 1) behind it, chapter 7 (about
# 2 minutes) third, so each worker starts on one of the two. (In alphabetical order chapter 6 started only after
# chapters 2 and 4 had run on its worker.)
SMOKE       ?= 3000
SMOKE_STAGE := build/smoke
SMOKE_AFTER := 08_synthesis
SMOKE_ORDER := 06_sparse_patterns 01_copy_task 07_token_mixers 04_adam_and_sgld 02_bayesian_posterior \
	03_linear_vs_softmax 05_language_models
SMOKE_RUN    = BOOK_FAST=0 BOOK_SMOKE=$(SMOKE) BOOK_WIDGETS=1 BOOK_CACHE_DIR=$(CURDIR)/$(SMOKE_STAGE)/cache \
	$(BIN)/python -m pytest -q --nbmake --overwrite --nbmake-timeout=1500 --durations=0
smoke-paper: venv
	$(BIN)/python tools/bookctl.py stage $(SMOKE_STAGE) >/dev/null
	$(SMOKE_RUN) -n $(JOBS) $(foreach c,$(SMOKE_ORDER),$(SMOKE_STAGE)/chapters/$(c).ipynb)
	$(SMOKE_RUN) $(SMOKE_STAGE)/chapters/$(SMOKE_AFTER).ipynb

# Renders the executed notebooks; warnings are errors (-W -n --keep-going).
html: venv
	rm -rf _build
	$(BIN)/jupyter-book build $(STAGE) --path-output . -W -n --keep-going

check-html: venv
	$(BIN)/python -m pytest -q tests/test_built_html.py --html-dir $(HTML)

# Every built page in headless Chromium: images load, MathJax typesets every formula (served from the book, no CDN),
# no console error; one screenshot per chapter in _build/screenshots/. Installs Debian's chromium where it is missing.
check-browser: venv chromium
	$(BIN)/python -m pytest -q -n $(JOBS) tests/test_browser.py --html-dir $(HTML)

chromium:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || [ -n "$$BOOK_CHROMIUM" ] || { \
	  echo "installing Debian's chromium for the browser checks"; \
	  apt-get install -y --no-install-recommends chromium || { apt-get update && apt-get install -y --no-install-recommends chromium; }; }

# Executes the first two chapters a second time (results cache off), through the same nbmake path as `execute`,
# and compares every claim with the first execution.
SECOND := build/determinism
determinism: venv
	$(BIN)/python tools/bookctl.py stage $(SECOND)
	BOOK_CACHE=0 $(BIN)/python -m pytest -q --nbmake --overwrite -n $(JOBS) --nbmake-timeout=$(NB_TIMEOUT) \
		$$($(BIN)/python tools/bookctl.py chapters --first 2 --prefix $(SECOND)/ --suffix .ipynb)
	$(BIN)/python -m pytest -q tests/test_determinism.py --executed-dir $(STAGE) --second-dir $(SECOND)

# One chapter at a seed offset never used at seed 0, in its own stage and results cache, the way `BOOK_SEED=k make book`
# runs it: within its budget at an offset (README), progress on the console. Its statuses may move (fragile claims);
# it must run. Chapter 7 is the cheapest that recomputes committed studies (its rate tuning and comparison: 213 s
# at offset 37 on the development machine); chapter 8, which trains chapter 6's context study again, took 640 s there.
OFFSET_CHECK        ?= 07_token_mixers
OFFSET_CHECK_SEED   ?= 37
OFFSET_CHECK_BUDGET ?= 1800
OFFSET_STAGE        := build/offset
offset-check: venv
	$(BIN)/python tools/bookctl.py stage $(OFFSET_STAGE) >/dev/null
	BOOK_SEED=$(OFFSET_CHECK_SEED) BOOK_CONSOLE=1 BOOK_CACHE_DIR=$(CURDIR)/$(OFFSET_STAGE)/cache $(BIN)/python -m pytest \
		-q -s --nbmake --overwrite --nbmake-timeout=$(OFFSET_CHECK_BUDGET) $(OFFSET_STAGE)/chapters/$(OFFSET_CHECK).ipynb
	$(BIN)/python tools/bookctl.py times $(OFFSET_STAGE)

clean:
	rm -rf build _build
