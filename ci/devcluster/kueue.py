"""Kueue on the dev cluster: `python -m ci.devcluster kueue-up|kueue-down` (docs/local-cluster.md, "Kueue").

kueue-up, on a running dev cluster: builds Kueue's manager (`ci/build-tools.sh kueue`, KUEUE_VERSION),
applies its CRDs (from the module), starts the manager as a host process on loopback (webhook, health
and metrics ports picked with the cluster's, in ports.json) with a Configuration file written here, and
registers Kueue's own webhooks (Workload, ClusterQueue, LocalQueue, ResourceFlavor, Cohort, ...) with
`clientConfig.url: https://127.0.0.1:<port>/...` and the dev cluster's CA, serving the cluster's loopback
certificate. It returns once the manager reports ready and a server-side dry-run through its webhooks
passes. kueue-down stops it and deletes those webhook configurations; `down` (cluster-down) stops it too.
"""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import certs, kube, processes
from .components import Component
from .kubeconfig import render_kubeconfig, write_kubeconfig
from .settings import Settings
from .state import StateDir

__all__ = [
    "DEFAULT_FEATURE_GATES",
    "EXTERNAL_FRAMEWORKS",
    "PORT_NAMES",
    "Kueue",
    "KueueError",
    "config",
    "parse_feature_gates",
    "webhook_configurations",
]

log = logging.getLogger("devcluster")

NAMESPACE = "kueue-system"
#: Kueue's API group; only the webhooks of its own objects are registered.
GROUP = "kueue.x-k8s.io"
#: Kinds managed for Kueue by an outside controller (dihera's), as Kueue's config wants them: Kind.version.group.
EXTERNAL_FRAMEWORKS = ("DIJob.v2alpha1.diengine.opendilab.org",)
#: Kueue's built-in integrations: the list cannot be empty (empty means Kueue's default, batch/job), so it
#: is that default; its webhooks are not registered (nothing is suspended or mutated at creation), and with
#: manageJobsWithoutQueueName false Kueue only looks at Jobs labelled kueue.x-k8s.io/queue-name.
FRAMEWORKS = ("batch/job",)
#: VisibilityOnDemand off: its API server would listen on every interface (:8082).
#: DisableWaitForPodsReady: with a v1beta2 Configuration waitForPodsReady is on whenever the field is
#: absent (v0.19); this gate (deprecated, to go in v0.21) turns it off.
DEFAULT_FEATURE_GATES: Mapping[str, bool] = {"VisibilityOnDemand": False, "DisableWaitForPodsReady": True}
PORT_NAMES = ("kueue-webhook", "kueue-health", "kueue-metrics")
WEBHOOK_CONFIGURATIONS = {
    "MutatingWebhookConfiguration": "dihera-dev-kueue-mutating",
    "ValidatingWebhookConfiguration": "dihera-dev-kueue-validating",
}
#: The identity the manager uses (certs.CLIENTS) and the Component name (pid file, log file).
NAME = "kueue"


class KueueError(RuntimeError):
    """Kueue could not be started or stopped (the message says why and where its log is)."""


def parse_feature_gates(text: str) -> dict[str, bool]:
    """`A=true,B=false` (Kueue's --feature-gates syntax) as a dict."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.lower() not in ("true", "false") or not name:
            raise KueueError(f"feature gate {item!r}: expected NAME=true or NAME=false (in {text!r})")
        gates[name.strip()] = value.lower() == "true"
    return gates


@dataclass(frozen=True)
class Files:
    """What Kueue keeps in the state directory (under .devcluster/kueue/, its log in logs/)."""

    state: StateDir

    @property
    def root(self) -> Path:
        return self.state.root / "kueue"

    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @property
    def certs(self) -> Path:
        """tls.crt/tls.key: the webhook server's and the metrics server's certificate."""
        return self.root / "certs"

    @property
    def webhooks(self) -> Path:
        return self.root / "webhooks.json"

    @property
    def probe(self) -> Path:
        return self.root / "probe-flavor.json"

    @property
    def pidfile(self) -> Path:
        return self.state.pids / f"{NAME}.pid"

    @property
    def log(self) -> Path:
        return self.state.logs / f"{NAME}.log"


def config(files: Files, ports: Mapping[str, int], feature_gates: Mapping[str, bool]) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2): loopback ports, our certificate, no leader
    election, no internal cert management, batch/job plus dihera's DIJob as an external framework."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "manageJobsWithoutQueueName": False,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['kueue-health']}"},
        "metrics": {"bindAddress": f"127.0.0.1:{ports['kueue-metrics']}"},
        "webhook": {"host": "127.0.0.1", "port": ports["kueue-webhook"], "certDir": str(files.certs)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "integrations": {"frameworks": list(FRAMEWORKS), "externalFrameworks": list(EXTERNAL_FRAMEWORKS)},
        "featureGates": {**DEFAULT_FEATURE_GATES, **feature_gates},
    }


def webhook_configurations(upstream: Iterable[Mapping[str, Any]], port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    """Kueue's webhook configurations (config/components/webhook/manifests.yaml) with only the webhooks of
    its own API group, each pointed at https://127.0.0.1:`port`<its path> and trusting `ca_bundle`."""
    out = []
    for doc in upstream:
        kind = doc.get("kind", "")
        if kind not in WEBHOOK_CONFIGURATIONS:
            continue
        hooks = []
        for hook in doc.get("webhooks", []):
            groups = {g for rule in hook.get("rules", []) for g in rule.get("apiGroups", [])}
            if groups != {GROUP}:
                continue
            path = hook["clientConfig"]["service"]["path"]
            client_config = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": base64.b64encode(ca_bundle).decode()}
            hooks.append({**hook, "clientConfig": client_config})
        if not hooks:
            raise KueueError(f"no {GROUP} webhook in Kueue's {kind} (config/components/webhook/manifests.yaml)")
        metadata = {
            "name": WEBHOOK_CONFIGURATIONS[kind],
            "labels": {"app.kubernetes.io/managed-by": "dihera-devcluster"},
        }
        out.append({"apiVersion": doc["apiVersion"], "kind": kind, "metadata": metadata, "webhooks": hooks})
    return out


def component(settings: Settings, state: StateDir) -> Component:
    """The manager's command line (the Configuration file holds the rest)."""
    files = Files(state)
    return Component(
        NAME,
        [
            str(settings.binary("kueue")),
            f"--config={files.config}",
            f"--kubeconfig={state.component_kubeconfig(NAME)}",
            "--zap-log-level=info",
        ],
        env={"KUEUE_METRICS_CERT_DIR": str(files.certs)},  # read by ci/tools/kueue/metrics_cert_dir.go
    )


def _crd_name(path: Path) -> str:
    """kueue.x-k8s.io_workloads.yaml -> workloads.kueue.x-k8s.io"""
    group, plural = path.stem.split("_", 1)
    return f"{plural}.{group}"


@dataclass(frozen=True)
class Kueue:
    """Kueue's manager on the dev cluster of `settings` (its state directory)."""

    settings: Settings

    @property
    def state(self) -> StateDir:
        return StateDir(self.settings.state_dir)

    @property
    def files(self) -> Files:
        return Files(self.state)

    def _api(self) -> kube.Api:
        ports = self.state.load_ports() or {}
        server = f"https://127.0.0.1:{ports.get('kube-apiserver', 0)}"
        return kube.Api(server, self.state.pki, self.state.kubeconfig, self.settings.kubectl)

    def pid(self) -> int | None:
        return processes.pid_of(self.files.pidfile, self.settings.binary("kueue"))

    def running(self) -> bool:
        return self.pid() is not None

    # -- up ----------------------------------------------------------------------------------------

    def up(self, feature_gates: Mapping[str, bool] | None = None) -> None:
        """Start Kueue (idempotent: a manager running with the same configuration is kept) and return once
        it is ready and its webhooks answer."""
        start = time.monotonic()
        if not self.state.exists():
            raise KueueError(f"no dev cluster in {self.settings.state_dir}: run `make cluster-up` first")
        with self.state.lock():
            api = self._api()
            if not api.ready():
                raise KueueError(f"the dev cluster in {self.settings.state_dir} is not up: run `make cluster-up` first")
            self._build()
            ports = self.state.load_ports()
            assert ports is not None  # load_ports adds Kueue's ports to a state written before them
            self._prepare(ports, feature_gates or {})
            self._install_crds(api)
            c = component(self.settings, self.state)
            wanted = yaml.safe_dump(config(self.files, ports, feature_gates or {}), sort_keys=True)
            pid = self.pid()
            if pid is not None and self.files.config.read_text() != wanted:
                log.info("restarting kueue (pid %d): its configuration changed", pid)
                processes.stop(pid)
                pid = None
            self.files.config.write_text(wanted)
            if pid is None:
                log.info(
                    "starting kueue (webhook 127.0.0.1:%d, health %d)", ports["kueue-webhook"], ports["kueue-health"]
                )
                env = {"PATH": self.settings.path_env, "HOME": str(self.state.home), **c.env}
                processes.start(c.argv, self.files.pidfile, self.files.log, env, self.state.root)
            self._wait(lambda: kube.http_ok(f"http://127.0.0.1:{ports['kueue-health']}/readyz"), "kueue /readyz")
            self._register_webhooks(api, ports["kueue-webhook"])
            self._wait(lambda: self._webhooks_answer(api), "kueue's webhooks (server-side dry run of a ResourceFlavor)")
        pid = self.pid()
        log.info("kueue up in %.0fs (pid %s, log %s)", time.monotonic() - start, pid, self.files.log)

    def _build(self) -> None:
        env = {**self.settings.build_env, "PATH": self.settings.path_env, "DIHERA_CACHE": str(self.settings.cache_dir)}
        versions = ["--kubernetes", self.settings.kubernetes_version, "--argo", self.settings.argo_version]
        if not self.settings.binary("kueue").exists():
            log.info("building kueue with ci/build-tools.sh (cold: ~15 CPU-minutes), or waiting for a build under way")
        result = subprocess.run(
            ["bash", str(self.settings.build_script), *versions, "kueue"], env=env, stdout=subprocess.DEVNULL
        )
        if result.returncode != 0:
            raise KueueError(f"ci/build-tools.sh kueue failed (exit {result.returncode}); its output is above")

    def _prepare(self, ports: Mapping[str, int], feature_gates: Mapping[str, bool]) -> None:
        state, files = self.state, self.files
        files.certs.mkdir(parents=True, exist_ok=True)
        certs.ensure_pki(state.pki)  # issues the kueue client certificate on a cluster made before it existed
        # The webhook server answers https://127.0.0.1:<port>: the cluster's loopback serving certificate
        # (SAN IP:127.0.0.1, signed by the cluster CA) fits; the metrics server uses it too.
        # Replaced whole (rename) and only when changed: a running manager watches these files.
        for src, dst in (("serving.crt", "tls.crt"), ("serving.key", "tls.key")):
            data, target = (state.pki / src).read_bytes(), files.certs / dst
            if not target.exists() or target.read_bytes() != data:
                tmp = target.with_suffix(".tmp")
                tmp.write_bytes(data)
                tmp.chmod(0o600)
                tmp.replace(target)
        server = f"https://127.0.0.1:{ports['kube-apiserver']}"
        client = next(c for c in certs.CLIENTS if c.stem == NAME)
        write_kubeconfig(state.component_kubeconfig(NAME), render_kubeconfig(server, state.pki, NAME, client.user))

    def _install_crds(self, api: kube.Api) -> None:
        crd_dir = self.settings.binary("kueue-crds")
        crds = sorted(crd_dir.glob("*.yaml"))
        if not crds:
            raise KueueError(f"no Kueue CRDs in {crd_dir}: run `ci/build-tools.sh kueue`")
        namespace = self.files.root / "namespace.json"
        namespace.write_text(json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}))
        log.info("applying Kueue's %d CRDs and the %s namespace", len(crds), NAMESPACE)
        api.apply([*crds, namespace])
        names = [f"crd/{_crd_name(p)}" for p in crds]
        api.kubectl_run("wait", "--for=condition=Established", "--timeout=60s", *names)

    def _register_webhooks(self, api: kube.Api, port: int) -> None:
        upstream = self.settings.binary("kueue-webhooks.yaml")
        docs = [d for d in yaml.safe_load_all(upstream.read_text()) if d]
        items = webhook_configurations(docs, port, (self.state.pki / "ca.crt").read_bytes())
        self.files.webhooks.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2))
        api.apply([self.files.webhooks])

    def _webhooks_answer(self, api: kube.Api) -> bool:
        """A server-side dry-run create of a ResourceFlavor: it passes Kueue's mutating and validating webhooks."""
        flavor = {"apiVersion": f"{GROUP}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "dihera-probe"}}
        self.files.probe.write_text(json.dumps(flavor))
        try:
            api.kubectl_run("create", "--dry-run=server", "-o", "name", "-f", str(self.files.probe), timeout=30)
        except RuntimeError as err:
            if "AlreadyExists" in str(err) or "already exists" in str(err):
                return True  # left by someone: the dry run went through the webhooks before the conflict
            log.debug("kueue webhooks not answering yet: %s", err)
            return False
        return True

    def _wait(self, check: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if not self.running():
                raise KueueError(f"kueue exited; last lines of {self.files.log}:\n{processes.log_tail(self.files.log)}")
            if time.monotonic() > deadline:
                raise KueueError(f"timed out after {timeout:.0f}s waiting for {what}; see {self.files.log}")
            time.sleep(0.25)

    # -- down --------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the manager (what cluster-down does: the webhook configurations go with the cluster's etcd)."""
        pid = self.pid()
        if pid is not None:
            log.info("stopping kueue (pid %d)", pid)
            processes.stop(pid, grace=5.0)

    def down(self) -> None:
        """Stop the manager and delete its webhook configurations, so the API server no longer calls them
        (Kueue's CRDs and objects stay)."""
        if not self.state.exists():
            log.info("nothing to stop: no dev cluster state in %s", self.settings.state_dir)
            return
        with self.state.lock():
            self.stop()
            api = self._api()
            if api.ready():
                for kind, name in WEBHOOK_CONFIGURATIONS.items():
                    api.kubectl_run("delete", kind.lower(), name, "--ignore-not-found")
            log.info("kueue down")
