# The Helm chart (charts/dihera): lint, docs and tests. Included by the Makefile, which puts
# $(DIHERA_CACHE)/bin (helm, ct, helm-docs) on PATH and defines VENV and PYTHON.
CHART := charts/dihera
CHART_KUBE_VERSION ?= $(shell . ci/versions.env && echo $$KUBERNETES_VERSION)

.PHONY: chart-lint chart-docs chart-docs-check chart-test chart-install-test

chart-lint: setup chart-docs-check ## helm lint --strict (each ci/*-values.yaml), ct lint (yamllint + yamale), README check
	helm lint --strict --kube-version $(CHART_KUBE_VERSION) $(CHART)
	@set -e; for f in $(CHART)/ci/*-values.yaml; do \
	  echo "helm lint --strict -f $$f"; \
	  helm lint --strict --quiet --kube-version $(CHART_KUBE_VERSION) -f $$f $(CHART); \
	done
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" ct lint --config ci/ct.yaml --charts $(CHART) --validate-maintainers=false

chart-docs: setup ## regenerate charts/dihera/README.md from README.md.gotmpl and values.yaml (helm-docs)
	$(PYTHON) ci/chart_docs.py

chart-docs-check: setup ## fail when charts/dihera/README.md is out of date
	$(PYTHON) ci/chart_docs.py --check

chart-test: setup ## template tests over `helm template` (no cluster)
	$(VENV)/bin/pytest tests/chart

chart-install-test: setup ## helm install / upgrade / uninstall on the local control plane
	$(VENV)/bin/pytest -m cluster tests/integration/test_chart_install.py
