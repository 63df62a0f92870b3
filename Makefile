# The two commands of the README.  Each creates .venv when it is missing (or older than pyproject.toml).
PYTHON ?= python3
# `make lab VENV=path` runs with another virtual environment (tests/test_lab_command.py does).
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8888
LAB_ARGS ?=
# The learner's own copy of the chapters and exercises (git-ignored): `make lab` opens the lab there.
MY_WORK ?= $(CURDIR)/my-work

COMPILER := $(VENV)/.compiler

.PHONY: lab lab-instructor test toolkit compiler-facts exercises gpu-lane site site-import clean

# The packages go in with uv (installed into .venv by pip first): the same versions pip resolves (checked on
# 2026-12-04: the two venvs' freezes agree), in a fraction of the time. Should uv fail, pip installs them as before.
# --compile-bytecode, as pip does: without .pyc files (and with PYTHONDONTWRITEBYTECODE set, as on CI) every process
# compiled numba, NumPy and Jupyter again on import (`import course` 3.3 s instead of 0.85 s; the suite 631 s, not 478 s)
INSTALL = $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip uv
	$(INSTALL) -e '.[dev]' || $(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The CUDA compilers (NVVM, ptxas, nvdisasm as pip wheels, ~250 MB download; no GPU needed): lets the
# tracer read what the GPU compiler makes of kernels that are not among the course's own.
$(COMPILER): $(STAMP)
	$(INSTALL) -e '.[dev,compiler]' || $(BIN)/python -m pip install -q -e '.[dev,compiler]'
	touch $(COMPILER)

## Open the course in JupyterLab on chapter 00 (works as root too), in the learner's own copy: my-work/ gets
## the notebooks and exercises it lacks (course/mywork.py; never overwrites a file), so edits stay out of the
## checkout and `git pull` never collides with them; solutions/ is not in it.  jupyter/lab/settings/overrides.json
## answers JupyterLab's "news?" question with no (and no update checks), so no pop-up covers chapter 00.
## jupyter/custom/custom.css (served with fonts/ at /custom/, in place of the user's own custom folder) lets
## Chinese fall back to the course's CJK subset font where the system has no CJK font.
LAB_OPTIONS = --allow-root --ip 127.0.0.1 --port $(PORT) \
	  --LabApp.app_settings_dir=$(CURDIR)/jupyter/lab/settings \
	  --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate \
	  --LabApp.custom_css=True \
	  "--ServerApp.tornado_settings={'static_custom_path': ['$(CURDIR)/jupyter/custom', '$(CURDIR)/fonts']}"
lab: $(STAMP)
	$(BIN)/python course/mywork.py $(MY_WORK)  # by path: copying needs no backend
	$(BIN)/jupyter lab $(LAB_OPTIONS) --ServerApp.root_dir=$(MY_WORK) \
	  --LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb $(LAB_ARGS)

## For an instructor: the whole checkout (solutions/ included), the course's own notebooks.
lab-instructor: $(STAMP)
	$(BIN)/jupyter lab $(LAB_OPTIONS) --ServerApp.root_dir=$(CURDIR) \
	  --LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb $(LAB_ARGS)

## Run the whole suite: unit tests, every notebook (nbval), graded checks, browser test.  Three pytest-xdist
## workers (TEST_WORKERS=0 runs in one process), each taking whole files: a notebook's cells share one kernel.
## Three on 2 cores: much of the suite waits on other processes (Jupyter kernels, the grader's runs, Chromium), and
## a third worker fills those waits (measured here: 436 s against 494 s with two).
TEST_WORKERS ?= 3
test: $(STAMP) $(COMPILER)
	sh scripts/ensure-chromium.sh
	sh scripts/ensure-bwrap.sh
	$(BIN)/ruff check .
	COURSE_STRICT=1 $(BIN)/python -m pytest tests notebooks solutions --nbval-lax -q -n $(TEST_WORKERS) --dist loadfile

## Install the CUDA compilers for the tracer (optional for learners; `make test` does it).
toolkit: $(COMPILER)

## Rebuild data/compiler_facts.json: what ptxas makes of every kernel the course traces (after editing
## a kernel module: a kernel's facts are keyed by its source and line, so an edit above it invalidates them).
compiler-facts: $(COMPILER)
	rm -f data/compiler_facts.json
	COURSE_COMPILER_FACTS_WRITE=1 $(BIN)/python scripts/gpu/validate_tracer.py --dry-run --out build/compiler-facts
	COURSE_COMPILER_FACTS_WRITE=1 $(BIN)/python -m pytest notebooks solutions --nbval-lax -q -p no:cacheprovider \
	  -n $(TEST_WORKERS) --dist loadfile
	$(BIN)/python scripts/compiler_facts_cases.py

## Regenerate exercises/ from solutions/.
exercises: $(STAMP)
	$(BIN)/python -m course.exercises build

## On the lent H200: run every notebook there and refresh data/measurements (see scripts/gpu_lane.sh).
gpu-lane:
	sh scripts/gpu_lane.sh

## Build the course website into build/site/ (index.html, one page per chapter) from the executed copies in
## site/executed/; a chapter changed since its copy is executed on the CPU (and its page says so). Offline.
site: $(STAMP)
	$(BIN)/python site/sitetool.py build

## After a GPU lane run with the `execute` step: make site-import TGZ=path/to/lane.tgz (then commit site/executed/).
site-import: $(STAMP)
	@test -n "$(TGZ)" || { echo "usage: make site-import TGZ=path/to/lane.tgz (from gpu_lane.sh OUTDIR execute)"; exit 2; }
	$(BIN)/python site/sitetool.py import $(TGZ)
	$(BIN)/python site/sitetool.py build

clean:
	rm -rf $(VENV)
