# labkit — two commands for a fresh machine that has only Python >= 3.11 and make:
#
#   make lab     set everything up, then open JupyterLab on notebooks/ (quietly: warnings only,
#                the URL to open, no news prompt)
#   make test    set everything up, then lint (ruff, configured in pyproject.toml) and run the whole
#                test suite (what CI runs; under CI, as root, it also apt-get installs Debian's
#                chromium and postgresql for the browser and Postgres tests)
#   make bench   set everything up, then run every benchmark in bench/ (a few minutes; CPU time,
#                medians): it ends with one line, `bench: middleware_vs_floor=... first_plot_s=...`
#                (bench/README.md). Run it on a quiet machine; BENCH_ARGS=--quick checks the driver.
#   make book    set everything up, then run every notebook and write the course as a static HTML
#                site to build/book/ (open build/book/index.html; offline, no CDN: scripts/book.py):
#                a page and a reveal.js slide deck per notebook. BOOK_ARGS="--only 01 04" builds
#                some notebooks only.
#   make slides  the same, slide decks only: build/book/<notebook>.slides.html (scripts/slides.py
#                says which cells make a slide), reveal.js and plotly.js from installed packages.
#
# Setup, done once and redone only when uv.lock or pyproject.toml changes:
#   1. check that $(PYTHON) is Python >= 3.11;
#   2. make a small tools venv, .tools/, with `python -m venv`, and pip-install uv (pinned) into it;
#   3. `uv sync --frozen` builds .venv/ with exactly the versions in uv.lock, compiling bytecode
#      ([tool.uv] compile-bytecode in pyproject.toml) so kernels start fast.
# uv never downloads a Python (UV_PYTHON_DOWNLOADS=never): it uses $(PYTHON).
#
#   4. (make lab / make setup) JupyterLab's settings overrides into .venv (no news prompt, no update
#      check: scripts/jupyterlab_overrides.json), and, in a git clone, the clean filter that lets git
#      see notebooks without their outputs (scripts/nbstrip.py, named in .gitattributes); make lab's
#      server refreshes git's index after saving a notebook that was only run
#      (scripts/jupyter_lab_config.py), so git status stays clean and git pull can update it.
#
# Other targets: make setup (steps 1-4 only), make reset (notebooks back as committed; NB=04 for
# one; edited ones are copied to .reset-backup/ first), make lock (maintainers: re-lock, re-export
# requirements.lock for pip and binder/requirements.txt for conda and Binder; needs PyPI), make canary
# (maintainers: the suite on the newest releases; needs PyPI), make clean (remove .tools/ and .venv/).

PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .tools
VENV := .venv
UV := $(TOOLS)/bin/uv
SYNCED := $(VENV)/.labkit-synced
# $(PYTHON)'s own path, asked of it by the shell in each recipe that uses it (uv, the git filter)
PYTHON_EXE = $$($(PYTHON) -c 'import sys; print(sys.executable)')
SYNC = $(UV) sync --frozen --all-extras --quiet --python "$(PYTHON_EXE)"
# Two workers, whole files per worker (--dist loadfile): plain -n would scatter one notebook's
# cells over both workers and break it.
PYTEST_JOBS ?= 2
PYTEST_ARGS ?=
LAB_ARGS ?=
BENCH_ARGS ?=
CANARY_ARGS ?=
BOOK_ARGS ?=

export UV_PYTHON_DOWNLOADS := never

.PHONY: lab test bench book slides setup lock canary clean reset nbstrip-filter

# Where JupyterLab reads settings overrides (its app_settings_dir: <prefix>/share/jupyter/lab/settings).
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
# Warnings only: the server still prints the URL to open (at CRITICAL), and nothing else.
LAB_QUIET := --ServerApp.log_level=WARN --LabApp.log_level=WARN
NB ?=

lab: $(SYNCED) $(LAB_OVERRIDES) nbstrip-filter
	@flags="--ip=127.0.0.1 $(LAB_QUIET) --config=$(CURDIR)/scripts/jupyter_lab_config.py"; \
	if [ "$$(id -u)" = 0 ]; then flags="$$flags --allow-root"; fi; \
	echo "Starting JupyterLab on notebooks/ (start with START_HERE.md; Ctrl-C twice stops it)."; \
	if [ "$$(uname -s)" = Linux ] && [ -z "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ]; then \
	  flags="$$flags --no-browser"; \
	  echo "No display found: open the http://127.0.0.1:.../lab?token=... URL printed below in your browser."; \
	fi; \
	exec $(VENV)/bin/jupyter lab notebooks/ $$flags $(LAB_ARGS)

# Under CI only (CI set, as root, on Debian/Ubuntu), install what is missing of Debian's chromium
# and postgresql first, so tests/test_browser.py and tests/test_memory_postgres.py really run there
# (about 25 s each). A learner's `make test` never installs anything system-wide: without
# /usr/bin/chromium the browser test is skipped, without PostgreSQL's initdb the Postgres one.
test: $(SYNCED)
	@if [ -n "$${CI:-}" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  missing=""; \
	  [ -e /usr/bin/chromium ] || missing=" chromium"; \
	  command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
	    || missing="$$missing postgresql"; \
	  if [ -n "$$missing" ]; then \
	    echo "CI: installing Debian's$$missing for the browser and Postgres tests (apt-get install)"; \
	    (set -x; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) \
	      || echo "CI: apt-get could not install$$missing: the tests that need it are skipped, saying why"; \
	  fi; \
	fi
	$(VENV)/bin/ruff check labkit tests bench scripts
	$(VENV)/bin/python -m pytest -n $(PYTEST_JOBS) --dist loadfile $(PYTEST_ARGS)

bench: $(SYNCED)
	$(VENV)/bin/python bench/run_all.py $(BENCH_ARGS)

# Always syncs (a no-op in a second when nothing changed), so it also restores the tested versions
# after a `pip install -U` in .venv (labkit.versions.compare() names this command); lab, test and
# bench sync only when uv.lock or pyproject.toml changes.
# The settings override and the filter come after this sync, in a sub-make, not as prerequisites:
# through $(LAB_OVERRIDES) -> $(SYNCED) a fresh clone's `make setup` synced twice, and the filter
# would be written before step 1 has checked $(PYTHON).
setup: | $(TOOLS)/.uv-$(UV_VERSION)
	$(SYNC)
	@touch $(SYNCED)
	@$(MAKE) --no-print-directory $(LAB_OVERRIDES) nbstrip-filter

$(LAB_OVERRIDES): scripts/jupyterlab_overrides.json $(SYNCED)
	@mkdir -p $(@D)
	@cp scripts/jupyterlab_overrides.json $@

# In a git clone only: git passes every notebook through scripts/nbstrip.py (standard library, so
# the base Python runs it) before it compares or stores it, so running a notebook leaves git clean.
# A $(PYTHON) that does not run stops here rather than writing a filter git cannot start.
nbstrip-filter:
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  py="$(PYTHON_EXE)" || exit 1; \
	  git config filter.nbstrip.clean "'$$py' scripts/nbstrip.py"; \
	fi

reset:
	@$(PYTHON) scripts/reset_notebooks.py $(NB)

book: $(SYNCED)
	$(VENV)/bin/python scripts/book.py $(BOOK_ARGS)

slides: $(SYNCED)
	$(VENV)/bin/python scripts/book.py --slides $(BOOK_ARGS)

# Step 1 and 2. The stamp's name carries the uv version, so changing UV_VERSION reinstalls uv.
$(TOOLS)/.uv-$(UV_VERSION):
	@command -v $(PYTHON) >/dev/null 2>&1 || { \
	  echo "error: '$(PYTHON)' not found. Install Python >= 3.11, or run: make $(MAKECMDGOALS) PYTHON=/path/to/python3.11"; \
	  exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "error: labkit needs Python >= 3.11, but $(PYTHON) is $$($(PYTHON) -c 'import platform; print(platform.python_version())')."; \
	  echo "       Install a newer Python, or run: make $(MAKECMDGOALS) PYTHON=/path/to/python3.11"; \
	  exit 1; }
	@rm -rf $(TOOLS)
	@$(PYTHON) -m venv $(TOOLS) || { \
	  rm -rf $(TOOLS); \
	  v=$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	  echo ""; \
	  echo "error: '$(PYTHON) -m venv' failed: this Python has no venv/ensurepip module."; \
	  echo "       On Debian or Ubuntu install it, then run make again:"; \
	  echo ""; \
	  echo "           sudo apt install python3-venv      (or python$$v-venv)"; \
	  echo ""; \
	  exit 1; }
	$(TOOLS)/bin/pip install --disable-pip-version-check --quiet uv==$(UV_VERSION)
	@touch $@

# Step 3. Re-runs when uv.lock or pyproject.toml is newer than the stamp (or .venv is gone).
$(SYNCED): uv.lock pyproject.toml | $(TOOLS)/.uv-$(UV_VERSION)
	@echo "Building .venv/ from uv.lock (the first time only: see the README for how long it takes) ..."
	$(SYNC)
	@touch $@

# Maintainers only (needs PyPI; 10 minutes or more): the newest releases of the runtime dependencies,
# resolved without uv.lock into a throwaway venv under a temp dir, then the suite there and a report
# of what broke (scripts/canary.py). Not part of `make test`. CANARY_ARGS="-- -x -q" to pass pytest options.
canary: $(TOOLS)/.uv-$(UV_VERSION)
	$(TOOLS)/bin/python scripts/canary.py --uv $(UV) --python "$(PYTHON_EXE)" $(CANARY_ARGS)

# Maintainers only (needs PyPI): after changing dependencies in pyproject.toml.
lock: $(TOOLS)/.uv-$(UV_VERSION)
	$(UV) lock
	$(UV) export --frozen --all-extras --no-emit-project --no-hashes --output-file requirements.lock
	$(UV) export --frozen --no-dev --extra course --group binder --no-emit-project --no-hashes \
	  --output-file binder/requirements.txt

clean:
	rm -rf $(TOOLS) $(VENV) .pytest_cache .hypothesis .benchmarks .ruff_cache build/book
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
