# The two commands of the README: `make demo` and `make test`. Both set up what they need.
VENV := .venv
AIRLINK := $(VENV)/bin/airlink

.PHONY: setup demo test lint test-rust test-python docs bench clean

setup:
	@bash scripts/setup.sh

## Reproduce the WIPEMU study (Table II, Figs. 4-7) into reports/wipemu.
demo: setup
	$(AIRLINK) reproduce wipemu --out reports/wipemu

## Every guard, then every Rust and Python test.
test: setup lint test-rust test-python

## Guards: rustfmt, clippy (warnings are errors; model crates ban the clock, see their
## clippy.toml), ruff, the native module's stub checked against the built module, and the
## TypedDicts of its results (python/airlink/_types.py) regenerated from the Rust structs.
lint: setup
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --release --quiet -- -D warnings
	$(VENV)/bin/ruff check --quiet python tests
	$(VENV)/bin/python -m mypy.stubtest airlink._core --concise \
		--allowlist python/airlink/_core.stubtest-allowlist
	$(VENV)/bin/python scripts/gen_result_types.py --check

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
