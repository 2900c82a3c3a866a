"""Bring the dev cluster up, report on it, tear it down."""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import certs, images, kube, manifests, nodehost, processes, realnode
from .components import Component, argo_ui_url, components
from .kubeconfig import render_kubeconfig, write_kubeconfig
from .kueue import Kueue
from .settings import Settings
from .state import StateDir, di_server_url, pick_ports

__all__ = ["Cluster", "ClusterError"]

log = logging.getLogger("devcluster")


#: Audit what dihera's own ServiceAccounts (namespace dihera-system, the chart's release namespace) ask
#: of the API server, at Metadata level (who, verb, resource; no bodies); nothing else.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    userGroups: ["system:serviceaccounts:dihera-system"]
  - level: None
"""


class ClusterError(RuntimeError):
    """The dev cluster could not be brought up (the message says which part and shows its log)."""


class ComponentExited(ClusterError):
    """A component's process ended while we waited for it to become ready."""


@dataclass(frozen=True)
class Cluster:
    settings: Settings

    @property
    def state(self) -> StateDir:
        return StateDir(self.settings.state_dir)

    @property
    def kubeconfig(self) -> Path:
        return self.state.kubeconfig

    # -- queries ---------------------------------------------------------------------------------

    def _components(self) -> list[Component]:
        ports = self.state.load_ports()
        return components(self.settings, self.state, ports) if ports else []

    def _pidfile(self, c: Component) -> Path:
        return self.state.pids / f"{c.name}.pid"

    def _running(self) -> dict[str, bool]:
        return {c.name: processes.alive(self._pidfile(c), c.binary) for c in self._components()}

    def _api(self) -> kube.Api:
        ports = self.state.load_ports() or {}
        return kube.Api(
            f"https://127.0.0.1:{ports.get('kube-apiserver', 0)}",
            self.state.pki,
            self.kubeconfig,
            self.settings.kubectl,
        )

    def argo_ui_url(self) -> str | None:
        """The Argo UI's URL when this pair runs argo server (None: it runs none, or no ports yet)."""
        ports = self.state.load_ports()
        return argo_ui_url(ports) if ports and self.settings.argo_ui else None

    def _write_ui_url(self) -> None:
        url = self.argo_ui_url()
        if url:
            tmp = self.state.argo_ui_url.with_suffix(".tmp")  # renamed: a reader never sees it half-written
            tmp.write_text(url + "\n")
            tmp.replace(self.state.argo_ui_url)
            log.info("Argo UI: %s", url)

    def is_up(self) -> bool:
        running = self._running()
        return bool(running) and all(running.values()) and self._api().ready()

    # -- up ----------------------------------------------------------------------------------------

    def up(self) -> None:
        """Start whatever is not running and return once everything is ready (idempotent)."""
        with self.state.lock():
            self._up()

    def _up(self) -> None:
        start = time.monotonic()
        if self.state.exists() and self.is_up():
            log.info("already up: KUBECONFIG=%s", self.kubeconfig)
            self._write_ui_url()
            return
        self._build_tools()
        node_images = images.build_all(self.settings) if self.settings.real_node else []
        if not any(self._running().values()):
            self.state.reset()  # nothing of ours runs: start afresh on free ports
        self._prepare()
        api = self._api()
        for c in self._components():
            if c.name == "netns-forward":  # the first process of the real node
                self._prepare_real_node()
            ready = functools.partial(self._component_ready, c, api)
            if processes.alive(self._pidfile(c), c.binary):
                try:  # already running: let it finish starting
                    self._wait(c, ready)
                    continue
                except ComponentExited:
                    log.info("%s was shutting down", c.name)  # start it again below
            if c.name == "kwok":
                self._install_objects(api)
                # A restarted kwok waits for its predecessor's node Leases to expire (40s): drop them.
                leases = [manifests.node_name(i) for i in range(self.settings.nodes)]
                api.kubectl_run("delete", "lease", "-n", "kube-node-lease", "--ignore-not-found", *leases)
            if c.name == "workflow-controller":
                api.kubectl_run("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
            self._start(c)
            self._wait(c, ready)
            if c.name == "containerd":
                log.info("importing %d images into containerd", len(node_images))
                files = realnode.node_files(self.state)
                images.import_all(node_images, files.containerd_socket, realnode.CONTAINERD_NAMESPACE)
        self._wait(None, lambda: self._nodes_ready(api), what="nodes Ready")
        self._wait(
            None,
            lambda: api.get("/api/v1/namespaces/default/serviceaccounts/default") is not None,
            what="default service account",
        )
        self._write_ui_url()
        log.info("up in %.0fs: export KUBECONFIG=%s", time.monotonic() - start, self.kubeconfig)

    def _build_tools(self) -> None:
        tools = self.settings.tools
        if all((self.settings.binary(t)).exists() for t in tools) and self.settings.argo_crd_dir.is_dir():
            log.info("checking tools (ci/build-tools.sh)")
        else:
            log.info("building tools with ci/build-tools.sh (cold: ~15 minutes on 2 cores)")
        env = {
            **self.settings.build_env,
            "PATH": self.settings.path_env,
            "DIHERA_CACHE": str(self.settings.cache_dir),
        }
        # Its own progress lines ("[build-tools] ...") go straight to stderr.
        result = subprocess.run(self.settings.build_command, env=env, stdout=subprocess.DEVNULL)
        if result.returncode != 0:
            raise ClusterError(f"ci/build-tools.sh failed (exit {result.returncode}); its output is above")

    def _prepare(self) -> None:
        state = self.state
        state.create()
        ports = state.load_ports()
        if ports is None:
            ports = pick_ports(self.settings.first_port)
            state.save_ports(ports)
        log.info("ports: %s", ", ".join(f"{k} {v}" for k, v in ports.items()))
        certs.ensure_pki(state.pki)
        state.audit_policy.write_text(AUDIT_POLICY)
        server = f"https://127.0.0.1:{ports['kube-apiserver']}"
        for client in certs.CLIENTS:
            config = render_kubeconfig(server, state.pki, client.stem, client.user)
            write_kubeconfig(state.component_kubeconfig(client.stem), config)
        write_kubeconfig(state.kubeconfig, render_kubeconfig(server, state.pki, "admin", "dihera-admin"))
        if self.settings.real_node:
            for path, text in realnode.render(state).items():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)

    def _prepare_real_node(self) -> None:
        """Claim the machine's real node, make its network namespace and write its configuration."""
        try:
            nodehost.claim(self.state.root)
        except nodehost.NodeBusy as err:
            raise ClusterError(str(err)) from err
        nodehost.create_netns()

    def _start(self, c: Component) -> None:
        log.info("starting %s", c.name)
        env = {"PATH": self.settings.path_env, "HOME": str(self.state.home), **c.env}
        argv, program = c.argv, None
        if c.netns is not None:  # nsenter execs the program inside the namespace: same pid
            argv, program = ["nsenter", f"--net={c.netns}", "--", *c.argv], c.argv[0]
        processes.start(argv, self._pidfile(c), self.state.logs / f"{c.name}.log", env, self.state.root, program)

    def _component_ready(self, c: Component, api: kube.Api) -> bool:
        if c.name == "containerd":
            return _containerd_ready(realnode.node_files(self.state).containerd_socket)
        if c.name == "kubelet":
            return self._node_ready(api, realnode.NODE_NAME)
        if c.health_url is None:
            return True
        if c.name == "kube-apiserver":
            return api.ready()
        return kube.http_ok(c.health_url, c.health_ca)

    def _node_ready(self, api: kube.Api, name: str) -> bool:
        node = api.get(f"/api/v1/nodes/{name}")
        return isinstance(node, dict) and _node_schedulable(node)

    def _install_objects(self, api: kube.Api) -> None:
        files = []
        argo = manifests.argo_objects(di_server_url(self.state.load_ports() or {}), self.settings.real_node)
        storage = manifests.storage_objects(realnode.NODE_NAME, str(self.state.root / "volumes"), images.PYTHON_IMAGE)
        groups = (
            ("nodes", manifests.nodes(self.settings.nodes)),
            ("argo", argo),
            ("storage", storage),
            ("dihera", manifests.dihera_objects()),
        )
        for name, objects in groups:
            path = self.state.manifests / f"{name}.json"
            path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2))
            files.append(path)
        crds = sorted(self.settings.argo_crd_dir.glob("*.yaml"))
        if not crds:
            raise ClusterError(f"no Argo CRDs in {self.settings.argo_crd_dir}: run ci/build-tools.sh")
        log.info(
            "applying Argo CRDs, the argo namespace and ConfigMap, the default StorageClass, %d nodes, %s (restricted)",
            self.settings.nodes,
            manifests.SYSTEM_NAMESPACE,
        )
        api.apply([*crds, *files])

    def _nodes_ready(self, api: kube.Api) -> bool:
        listing = api.get("/api/v1/nodes")
        names = {manifests.node_name(i) for i in range(self.settings.nodes)}
        if self.settings.real_node:
            names.add(realnode.NODE_NAME)
        ready = {n["metadata"]["name"] for n in (listing or {}).get("items", []) if _node_schedulable(n)}
        return names <= ready

    def _wait(self, c: Component | None, check: Callable[[], bool], what: str = "", timeout: float = 120.0) -> None:
        """Poll `check` until true; fail early, with its log, if component `c` exits."""
        deadline = time.monotonic() + timeout
        while not check():
            if c is not None and not processes.alive(self._pidfile(c), c.binary):
                log_file = self.state.logs / f"{c.name}.log"
                raise ComponentExited(f"{c.name} exited; last lines of {log_file}:\n{processes.log_tail(log_file)}")
            if time.monotonic() > deadline:
                name = what or (c.name if c else "?")
                hint = f"; see {self.state.logs}/{c.name}.log" if c else f"; logs in {self.state.logs}"
                raise ClusterError(f"timed out after {timeout:.0f}s waiting for {name}{hint}")
            time.sleep(0.25)

    # -- faults (tests/integration/test_faults.py) ----------------------------------------------

    def _component(self, name: str) -> Component:
        found = [c for c in self._components() if c.name == name]
        if not found:
            raise ClusterError(f"no component {name!r}: {[c.name for c in self._components()]}")
        return found[0]

    def kill(self, name: str, sig: int = signal.SIGKILL) -> int:
        """Send `sig` to component `name` and wait until it is gone (a fault on purpose); its pid."""
        c = self._component(name)
        pid = processes.pid_of(self._pidfile(c), c.binary)
        if pid is None:
            raise ClusterError(f"{name} is not running")
        os.kill(pid, sig)
        self._wait(None, lambda: not processes.alive(self._pidfile(c), c.binary), what=f"{name} to exit", timeout=30)
        return pid

    def restart(self, name: str) -> None:
        """Start component `name` again (on its port, with its state) and wait until it is ready."""
        c = self._component(name)
        with self.state.lock():
            if not processes.alive(self._pidfile(c), c.binary):
                self._start(c)
            self._wait(c, functools.partial(self._component_ready, c, self._api()))

    # -- down / status -------------------------------------------------------------------------

    def down(self) -> None:
        """Stop every process this tool started for this state dir and delete the state."""
        if not self.state.exists():
            log.info("nothing to stop: no dev cluster state in %s", self.settings.state_dir)
            return
        with self.state.lock():
            self._down()

    def _down(self) -> None:
        Kueue(self.settings).stop()  # started on demand (kueue-up), before the API server it talks to
        for c in reversed(self._components()):
            pid = processes.pid_of(self._pidfile(c), c.binary)
            if pid is not None:
                log.info("stopping %s (pid %d)", c.name, pid)
                processes.stop(pid, grace=3.0)  # the state is deleted next: no need for a drawn-out drain
        binaries = [self.settings.binary(t) for t in (*self.settings.tools, "kueue")]
        for pid in processes.strays(self.state.root, [*binaries, Path("/usr/bin/containerd")]):
            log.info("stopping stray process %d", pid)
            processes.stop(pid, grace=5.0)
        if nodehost.owner() == self.state.root:
            log.info("removing the real node: containers, mounts, network namespaces, cgroups, host paths")
            nodehost.teardown(realnode.node_files(self.state).root)
            nodehost.release()
        self.state.remove()
        log.info("down: removed %s", self.settings.state_dir)

    def status(self) -> dict[str, Any]:
        """What runs, on which ports, and whether the API server is ready."""
        ports = self.state.load_ports() or {}
        report: dict[str, Any] = {"state_dir": str(self.settings.state_dir), "components": {}}
        for c in self._components():
            pid = processes.pid_of(self._pidfile(c), c.binary)
            report["components"][c.name] = {"pid": pid, "running": pid is not None, "port": ports.get(c.name)}
        running = [v["running"] for v in report["components"].values()]
        kueue_pid = Kueue(self.settings).pid()  # on demand: listed when it runs, not needed for "up"
        if kueue_pid is not None:
            report["components"]["kueue"] = {"pid": kueue_pid, "running": True, "port": ports.get("kueue-webhook")}
        api_ready = bool(running) and any(running) and self._api().ready()
        report["api_ready"] = api_ready
        report["up"] = api_ready and all(running)
        if api_ready:
            listing = self._api().get("/api/v1/nodes") or {}
            report["nodes_ready"] = sum(_node_schedulable(n) for n in listing.get("items", []))
            report["nodes"] = {
                n["metadata"]["name"]: {
                    "ready": _node_schedulable(n),
                    "runtime": n.get("status", {}).get("nodeInfo", {}).get("containerRuntimeVersion", ""),
                    "real": realnode.NODE_LABEL[0] in n["metadata"].get("labels", {}),
                }
                for n in listing.get("items", [])
            }
            report["kubeconfig"] = str(self.kubeconfig)
            report["argo_ui_url"] = self.argo_ui_url()
        return report


def _containerd_ready(socket: Path) -> bool:
    if not socket.exists():
        return False
    result = subprocess.run(["ctr", f"--address={socket}", "version"], capture_output=True, timeout=10)
    return result.returncode == 0


def _node_schedulable(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions", [])
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    blocked = any(t["key"].startswith("node.kubernetes.io/") for t in node.get("spec", {}).get("taints", []))
    return ready and not blocked
