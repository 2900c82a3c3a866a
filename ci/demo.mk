# `make demo`: the README's first command. Included by the top-level Makefile (VENV, PYTHON, setup).
# Starts the local control plane unless $KUBECONFIG is set, installs the chart, runs `dihera controller`
# and `dihera server` locally (pids/logs in .devcluster/, the server's URL in .devcluster/di-server-url),
# submits a DIJob and shows it reach Succeeded. See ci/demo.py.
DEMO_JOB ?= workflows/atari-dqn.yaml
DEMO_NAMESPACE ?= default

.PHONY: demo demo-stop

demo: setup tools ## start the local cluster (unless $KUBECONFIG), the controller and the di-server; run a DIJob to Succeeded
	@if [ -z "$$KUBECONFIG" ]; then $(MAKE) --no-print-directory cluster-up; fi
	$(PYTHON) ci/demo.py --job $(DEMO_JOB) --namespace $(DEMO_NAMESPACE)

demo-stop: ## stop the controller and the di-server `make demo` started
	$(PYTHON) ci/demo.py --stop
