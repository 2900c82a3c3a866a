# `make demo`: the README's first command. Included by the top-level Makefile (VENV, PYTHON, setup).
# Starts the local control plane unless $KUBECONFIG is set, installs the chart (its controller and
# di-server run as pods; on the local control plane on the real node, from the image built here), and
# runs the cartpole DQN DIJob (learner, evaluator, two collectors: real DI-engine training) to
# Succeeded, showing its progress. The di-server's URL goes to .devcluster/di-server-url. See ci/demo.py.
DEMO_JOB ?= workflows/cartpole-dqn.yaml
DEMO_NAMESPACE ?= dihera-demo

.PHONY: demo demo-stop

demo: setup tools ## start the local cluster (unless $KUBECONFIG), install the chart, train the cartpole DIJob to Succeeded
	@if [ -z "$$KUBECONFIG" ]; then $(MAKE) --no-print-directory cluster-up; fi
	$(PYTHON) ci/demo.py --job $(DEMO_JOB) --namespace $(DEMO_NAMESPACE)

demo-stop: ## stop the demo's port-forward to the di-server and uninstall its chart release
	$(PYTHON) ci/demo.py --stop --uninstall
