# dihera — the two commands a newcomer needs:
#   make demo   set up the local control plane (or use $KUBECONFIG's cluster) and run a DIJob to Succeeded
#   make test   install everything and run every check and test (what CI runs)
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON_BOOT ?= python3
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
export DIHERA_CACHE ?= $(HOME)/.cache/dihera
export PATH := $(DIHERA_CACHE)/bin:$(PATH)

.PHONY: help setup tools images-bg generate check-generated lint typecheck unit packaging test test-default test-compat test-big fuzz argo-behaviour bench soak clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	$(PYTHON_BOOT) -m venv $(VENV)
	$(PYTHON) -m pip install -q --upgrade pip
	$(PYTHON) -m pip install -q -e ".[operator,dev]"
	touch $@

setup: $(VENV)/.installed ## create .venv with dihera and its dev tools

# The real node's images that need no Go program (the Python base, the project's image, Redis's) build
# in the background while `tools` compiles (ci/bg.sh); `make test` waits for them before its tests, then
# builds the DI-engine image (~3 GB of wheels to download, ~5.4 GB to write; only the real DI-engine
# tests, late in the run, need it) in the background beside the first tests: the session imports it into
# the real node when that build ends (tests/integration/conftest.py). Warm both are key checks.
REAL_NODE := $(if $(filter 0,$(DIHERA_REAL_NODE)),,1)
images-bg: setup setup-node ## start building the real node's images but DI-engine's in the background (log: build/bg/images.log)
	@$(if $(REAL_NODE),bash ci/bg.sh start images $(PYTHON) -m ci.devcluster images --without-di-engine,true)

tools: ## build the control-plane programs from the Go module proxy (cached in $DIHERA_CACHE), the real node's too
	bash ci/build-tools.sh default $(if $(REAL_NODE),kubelet coredns netns-forward pause argoexec seaweedfs)

generate: setup ## regenerate files derived from schemas/ and examples
	$(PYTHON) -m dihera.schema.generate
	$(PYTHON) -m tests.golden --write

check-generated: setup ## fail when a generated file drifted from its source (CRD, golden files, chart README)
	$(PYTHON) -m dihera.schema.generate --check
	$(PYTHON) -m tests.golden

# lizard: no function in dihera/ over 50 lines or of cyclomatic complexity over 15 (a table of data may
# carry a `# lizard forgives` comment).
lint: setup ## ruff, yamllint, import contracts (only dihera/kube talks to Kubernetes), function size and complexity
	$(VENV)/bin/ruff check dihera tests bench ci examples
	$(VENV)/bin/ruff format --check dihera
	$(VENV)/bin/yamllint -s .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/lizard -l python -C 15 -L 50 -w dihera

typecheck: setup ## mypy --strict
	$(VENV)/bin/mypy

unit: setup ## unit tests only (no cluster, no package index)
	$(VENV)/bin/pytest -m "not cluster and not packaging and not bench" tests

packaging: setup ## the wheel installed without extras into a fresh venv runs validate/render/crd/convert (index on first use)
	$(VENV)/bin/pytest -m packaging tests


# The version matrix: the whole suite on the default pair (ci/versions.env KUBERNETES_VERSION/ARGO_VERSION),
# and, beside it, the tests marked `compat` on the compat pair (COMPAT_*), each on its own local control plane.
# The compat row runs on kwok nodes only (DIHERA_REAL_NODE=0): one real node per machine, and the default row has it.
COMPAT_PAIR := $(shell . ci/versions.env && echo DIHERA_KUBERNETES_VERSION=$$COMPAT_KUBERNETES_VERSION DIHERA_ARGO_VERSION=$$COMPAT_ARGO_VERSION) DIHERA_REAL_NODE=0

COMPAT_TOOLS := $(shell . ci/versions.env && echo --kubernetes $$COMPAT_KUBERNETES_VERSION --argo $$COMPAT_ARGO_VERSION) \
	etcd kube-apiserver kube-controller-manager kube-scheduler kwok workflow-controller
COMPAT_BUILD_LOG := $(DIHERA_CACHE)/compat-build.log

# Kueue's manager (~15 CPU-minutes cold; the default row's Kueue tests need it) and then the compat
# pair's programs are built niced in the background while the default row's tests run, on the CPU
# they leave idle: cold, that hides most of both builds (a Kueue test that comes first waits for the
# build under way: ci/build-tools.sh builds a program once); warm, both are stamp checks. The compat
# row's tests then run beside the default row's, on their own cluster (its own state directory and
# ports: ci/devcluster/settings.py), into COMPAT_TEST_LOG, shown once the default row has ended.
COMPAT_TEST_LOG := build/compat-row.log
test: setup setup-node setup-ui images-bg tools check-generated lint typecheck chart-lint ## everything CI runs: checks, unit, chart and cluster tests on both rows of the version matrix
	@$(if $(REAL_NODE),bash ci/bg.sh wait images || exit 1; \
	  bash ci/bg.sh start di-engine-image $(PYTHON) -m ci.devcluster di-engine-image --build-only;) \
	  mkdir -p $(dir $(COMPAT_TEST_LOG)); \
	  { if ! { nice -n 10 bash ci/build-tools.sh kueue && nice -n 10 bash ci/build-tools.sh $(COMPAT_TOOLS); } > $(COMPAT_BUILD_LOG) 2>&1; then \
	      tail -n 40 $(COMPAT_BUILD_LOG); echo "[matrix] the background build (Kueue, the compat pair) failed"; exit 1; fi; \
	    grep -h '^\[build-tools\] built' $(COMPAT_BUILD_LOG) || true; \
	    $(MAKE) --no-print-directory test-compat; } > $(COMPAT_TEST_LOG) 2>&1 & bg=$$!; \
	  echo "[matrix] building Kueue's manager, then the compat pair's programs in the background (log: $(COMPAT_BUILD_LOG)); then the compat row's tests beside the default row's (log: $(COMPAT_TEST_LOG))"; \
	  $(MAKE) --no-print-directory test-default; rc=$$?; \
	  echo "[matrix] the compat row (running since the default row's start; log: $(COMPAT_TEST_LOG)):"; \
	  tail -n +1 --pid=$$bg -f $(COMPAT_TEST_LOG); wait $$bg || rc=1; exit $$rc

test-default: setup ## every test (unit, chart, cluster) on the default Kubernetes/Argo pair: the benchmarks and `exclusive` tests alone, then the real-node tests beside the rest (ci/test-default.sh)
	@start=$$SECONDS; VENV=$(VENV) bash ci/test-default.sh; rc=$$?; \
	  echo "[matrix] default pair ($$(. ci/versions.env && echo $$KUBERNETES_VERSION / Argo $$ARGO_VERSION)): $$((SECONDS - start))s"; exit $$rc

test-compat: setup ## the `compat` cluster tests on the compat pair (older Kubernetes/Argo; own state dir, built on first use)
	@start=$$SECONDS; env $(COMPAT_PAIR) $(VENV)/bin/pytest --durations=10 -p no:cacheprovider --basetemp=build/pytest-compat \
	    -m "cluster and compat" tests/integration; rc=$$?; \
	  echo "[matrix] compat pair ($(COMPAT_PAIR)): $$((SECONDS - start))s"; exit $$rc

test-big: setup ## the large-job test at full size: 1 learner + 2,000 collectors + 1 evaluator on kwok, scaled to 2,100 and 1,900
	DIHERA_BIG_JOB_COLLECTORS=2000 $(VENV)/bin/pytest -s -rA tests/integration/test_big_job.py

fuzz: setup ## the fuzz tests at 5,000 examples each (CI runs a few hundred): validate/render, and validate against the CRD on the local control plane
	DIHERA_FUZZ_EXAMPLES=5000 $(VENV)/bin/pytest -rA tests/unit/test_fuzz_validation.py tests/integration/test_crd_fuzz.py

argo-behaviour: setup ## re-measure what Argo does with scaling's changes to a running Workflow (docs/scaling.md); DIHERA_ARGO_VERSION / DIHERA_KUBERNETES_VERSION pick the pair
	$(VENV)/bin/pytest -s -rA tests/integration/test_argo_behaviour.py

bench: setup ## benchmarks (print figures): CLI start-up, rendering, the di-server's CPU per request, then the controller and the di-server on the local control plane, a 100-trial sweep
	$(PYTHON) bench/bench_cli.py
	$(PYTHON) bench/bench_render.py
	$(PYTHON) bench/bench_server_app.py
	@if [ -z "$$KUBECONFIG" ]; then $(MAKE) --no-print-directory cluster-up; fi
	$(PYTHON) bench/bench_controller.py
	$(PYTHON) bench/bench_server.py
	$(PYTHON) bench/bench_realnode.py
	$(PYTHON) bench/bench_peer_wait.py
	$(PYTHON) bench/bench_bigjob.py
	$(PYTHON) bench/bench_sweep.py

soak: setup ## the soak benchmark at full size: 30 minutes of random operations over 200 DIJobs (CI runs 60 s over 20)
	@if [ -z "$$KUBECONFIG" ]; then $(MAKE) --no-print-directory cluster-up; fi
	$(PYTHON) bench/bench_soak.py

clean: ## remove caches in the checkout (not the Go build cache)
	rm -rf .pytest_cache .mypy_cache .ruff_cache build dist

-include ci/cluster.mk
-include ci/chart.mk
-include ci/demo.mk
