# Local control plane (ci/devcluster): etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kwok, Argo's workflow-controller and argo server (the Argo UI) on 127.0.0.1, and a real node (kubelet +
# containerd, see docs/local-cluster.md); state, logs and kubeconfig in .devcluster/. Included by the Makefile.
PYTHON ?= .venv/bin/python

.PHONY: setup-node setup-ui cluster-up cluster-down cluster-status di-engine-image

setup-node: ## Debian packages of the real node and its image builds (containerd, runc, CNI plugins, buildah, mmdebstrap)
	@if [ "$${DIHERA_REAL_NODE:-1}" != 0 ]; then bash ci/install-node-packages.sh; fi

setup-ui: ## Debian's chromium for the Argo UI's browser test (driven by Python playwright: no browser download)
	@bash ci/install-ui-packages.sh

cluster-up: setup setup-node ## start the local control plane (builds its programs and images first when missing); idempotent
	$(PYTHON) -m ci.devcluster up

cluster-down: ## stop what `make demo` and cluster-up started and delete .devcluster/ (and the compat pair's)
	-@[ -x $(PYTHON) ] && $(PYTHON) ci/demo.py --stop
	$(PYTHON) -m ci.devcluster down
	env $(COMPAT_PAIR) $(PYTHON) -m ci.devcluster down

cluster-status: ## which control-plane processes run, on which ports
	@$(PYTHON) -m ci.devcluster status

di-engine-image: setup setup-node ## build the DI-engine image (ci/images/di-engine, ~5 GB) if its inputs changed; import it into the real node if one runs
	$(PYTHON) -m ci.devcluster di-engine-image
