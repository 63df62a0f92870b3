# The two commands of the README.  Each creates .venv when it is missing (or older than pyproject.toml).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8888
LAB_ARGS ?=

.PHONY: lab test exercises gpu-lane clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

## Open the course in JupyterLab on chapter 00 (works as root too).
lab: $(STAMP)
	$(BIN)/jupyter lab --allow-root --ip 127.0.0.1 --port $(PORT) \
	  --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb $(LAB_ARGS)

## Run the whole suite: unit tests, every notebook (nbval), graded checks, browser test.
test: $(STAMP)
	sh scripts/ensure-chromium.sh
	COURSE_STRICT=1 $(BIN)/python -m pytest tests notebooks solutions --nbval-lax -q

## Regenerate exercises/ from solutions/.
exercises: $(STAMP)
	$(BIN)/python -m course.exercises build

## On the lent H200: run every notebook there and refresh data/measurements (see scripts/gpu_lane.sh).
gpu-lane:
	sh scripts/gpu_lane.sh

clean:
	rm -rf $(VENV)
