# The two commands of the README: `make demo` and `make test`. Both set up what they need.
VENV := .venv
AIRLINK := $(VENV)/bin/airlink

.PHONY: setup demo test test-rust test-python docs bench clean

setup:
	@bash scripts/setup.sh

## Reproduce the WIPEMU study (Table II, Figs. 4-7) into reports/wipemu.
demo: setup
	$(AIRLINK) reproduce wipemu --out reports/wipemu

## Every Rust and Python test.
test: setup test-rust test-python

test-rust:
	cargo test --workspace --release

test-python:
	$(VENV)/bin/python -m pytest -q

## The documentation site into site/ (warnings are errors). `make test` builds it too, as a
## test (tests/test_docs.py), so a broken page fails the suite.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

## Benchmarks (figures, not assertions).
bench: setup
	$(AIRLINK) bench --dumbbell
	cargo bench --workspace

clean:
	rm -rf target $(VENV) reports results site
