"""Fixtures for tests that need a Kubernetes control plane (marker: ``cluster``).

The session's cluster is the one ``$KUBECONFIG`` names when that file exists; otherwise the local
dev cluster (ci/devcluster, the code behind ``make cluster-up``), started for the session and
stopped at its end unless it was already up before.

Every fixture more than one test module uses is here (the cluster, a namespace, the CRDs, Kueue, the
controller, the di-server); the helpers they and the tests use are in modules named for what they hold
(controllers.py, servers.py, jobs.py, lifecycle.py...), never in a test module (tests/unit/test_test_imports.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `ci` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(REPO))

from ci.devcluster import Cluster, Settings, realnode  # noqa: E402
from ci.devcluster.dingimage import (  # noqa: E402
    BuildThenImport,
    ImageImport,
    background_build,
    ensure_ding_image,
    start_import,
)
from ci.devcluster.kueue import Kueue, parse_feature_gates  # noqa: E402
from dihera.schema import GROUP, PLURAL, VERSION, crd_manifest, dijob_schema  # noqa: E402
from dihera.server import ServerSettings  # noqa: E402
from tests.integration.controllers import (  # noqa: E402
    RBAC_KINDS,
    SA_NAME,
    SA_NAMESPACE,
    Controller,
    denied,
    helm_path,
    kubectl,
)
from tests.integration.kueue import Queues, create_queues, delete_queues  # noqa: E402
from tests.integration.servers import argo_ui_config, install_server_rbac, local_tls, running_server  # noqa: E402
from tests.integration.versions import pair  # noqa: E402
from tests.integration.volumes import static_volumes  # noqa: E402

T = TypeVar("T")
Poll = Callable[..., Any]


# Set by ci/test-default.sh, which runs several sessions on one local control plane: it starts the cluster
# before them and stops it (and Kueue with it) after them, so no session stops either at its end.
KEPT = os.environ.get("DIHERA_KEEP_CLUSTER") == "1"

WANTS_DING_IMAGE = pytest.StashKey[bool]()
DING_IMAGE_IMPORT = pytest.StashKey[ImageImport | BuildThenImport]()


@pytest.hookimpl(trylast=True)  # after `-m`/`-k` deselected theirs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With the local control plane made without its real node (DIHERA_REAL_NODE=0), the `realnode`
    tests are skipped, saying why, rather than failing on a node that is not there. Otherwise notes
    whether a selected test needs the DI-engine image (its import starts once the cluster is up)."""
    if os.environ.get("DIHERA_REAL_NODE", "1") != "0" or Path(os.environ.get("KUBECONFIG", "")).is_file():
        config.stash[WANTS_DING_IMAGE] = any("ding_image" in getattr(item, "fixturenames", ()) for item in items)
        return
    skip = pytest.mark.skip(reason="DIHERA_REAL_NODE=0: the local control plane has no real node")
    for item in items:
        if "realnode" in item.keywords:
            item.add_marker(skip)


def _start_ding_image_import(config: pytest.Config, dev: Cluster) -> None:
    """Start importing the DI-engine image into the local real node's containerd in the background (2-3
    minutes of disk, little CPU) when a selected test needs it and its archive is built; the
    `ding_image` fixture waits for it. The import overlaps the tests before the first real workload."""
    socket = realnode.node_files(dev.state).containerd_socket
    if not config.stash.get(WANTS_DING_IMAGE, False) or not socket.exists():
        return
    if background_build(dev.settings) is not None:  # `make test` builds it beside the first tests
        config.stash[DING_IMAGE_IMPORT] = BuildThenImport(dev.settings, socket, realnode.CONTAINERD_NAMESPACE)
        return
    started = start_import(dev.settings, socket, realnode.CONTAINERD_NAMESPACE)
    if started is not None:
        config.stash[DING_IMAGE_IMPORT] = started


@pytest.fixture(scope="session")
def kubeconfig(pytestconfig: pytest.Config) -> Iterator[Path]:
    """Path of an admin kubeconfig for the session's cluster."""
    given = os.environ.get("KUBECONFIG", "")
    if given and Path(given).is_file():
        yield Path(given)
        return
    dev = Cluster(Settings.from_environ())
    started_here = not (dev.state.exists() and dev.is_up()) and not KEPT
    try:
        dev.up()  # a failure names the component and shows the end of its log
    except Exception:
        if started_here:
            dev.down()
        raise
    _start_ding_image_import(pytestconfig, dev)
    try:
        yield dev.kubeconfig
    finally:
        pending = pytestconfig.stash.get(DING_IMAGE_IMPORT, None)
        if pending is not None:
            pending.cancel()
        if started_here:
            dev.down()


@pytest.fixture(scope="session")
def api_client(kubeconfig: Path) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        yield api
    finally:
        api.close()


@pytest.fixture(scope="session")
def cluster(api_client: client.ApiClient) -> client.ApiClient:
    """The session's cluster, as an API client (what most tests want)."""
    return api_client


def wait_until(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.5) -> T:
    """Poll `check` until it returns a truthy value, and return it; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last value: {last!r})")


@pytest.fixture(scope="session")
def poll() -> Poll:
    """``poll(check, timeout, what)``: `wait_until` as a fixture."""
    return wait_until


@contextlib.contextmanager
def fresh_namespace(cluster: client.ApiClient) -> Iterator[str]:
    """A fresh namespace whose default service account exists; on a clean exit, every DIJob's newest
    condition must be its phase's; deleted after."""
    core = client.CoreV1Api(cluster)
    name = f"dihera-test-{uuid.uuid4().hex[:8]}"
    core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={"dihera.io/test": "true"}))
    )

    def default_sa() -> bool:
        try:
            core.read_namespaced_service_account("default", name)
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        return True

    wait_until(default_sa, 30, f"service account default in {name}")
    try:
        yield name
        contradictions = phase_contradictions(cluster, name)
        assert not contradictions, "a DIJob's newest condition contradicts its phase:\n" + "\n".join(contradictions)
    finally:
        try:
            core.delete_namespace(name)
        except ApiException as err:
            if err.status != 404:
                raise


@pytest.fixture
def namespace(cluster: client.ApiClient) -> Iterator[str]:
    """A fresh namespace whose default service account exists; deleted after the test."""
    with fresh_namespace(cluster) as name:
        yield name


@pytest.fixture
def storage_class(cluster: client.ApiClient, namespace: str) -> Iterator[str]:
    """A StorageClass name of the test's own and two PersistentVolumes of it that checkpoint claims of that class
    bind to (tests/integration/volumes.py), deleted after the test."""
    with static_volumes(cluster, f"ckpt-{namespace}") as name:
        yield name


def phase_contradictions(cluster: client.ApiClient, namespace: str) -> list[str]:
    """The test's DIJobs whose newest condition (the last) is not their phase's, True (every test checks)."""
    try:
        found = client.CustomObjectsApi(cluster).list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    except ApiException as err:
        if err.status == 404:  # no DIJob CRD on this cluster yet
            return []
        raise
    wrong = []
    for job in found.get("items") or []:
        status = job.get("status") or {}
        conditions = status.get("conditions") or []
        if not conditions:
            continue
        newest = conditions[-1]
        if (newest.get("type"), newest.get("status")) != (status.get("phase"), "True"):
            wrong.append(f"{job['metadata']['name']}: phase {status.get('phase')}, newest condition {newest}")
    return wrong


@pytest.fixture(scope="session")
def dijob_crd(cluster: client.ApiClient, poll: Poll) -> None:
    """The CRD generated from schemas/, written and Established. Another session on the same cluster may
    write it at the same moment (ci/test-default.sh runs two at once): a conflict is read again and retried."""
    ext = client.ApiextensionsV1Api(cluster)
    crd = crd_manifest(dijob_schema())
    name = crd["metadata"]["name"]

    def written() -> bool:
        try:
            existing = ext.read_custom_resource_definition(name)
            crd["metadata"]["resourceVersion"] = existing.metadata.resource_version
            ext.replace_custom_resource_definition(name, crd)
        except ApiException as err:
            if err.status == 409:  # written by another session since our read
                return False
            if err.status != 404:
                raise
            crd["metadata"].pop("resourceVersion", None)
            try:
                ext.create_custom_resource_definition(crd)
            except ApiException as created:
                if created.status == 409:  # created by another session since our read
                    return False
                raise
        return True

    poll(written, 30, f"CRD {name} written")

    def established() -> bool:
        conds = ext.read_custom_resource_definition(name).status.conditions or []
        return any(c.type == "Established" and c.status == "True" for c in conds)

    poll(established, 30, f"CRD {name} Established")


@pytest.fixture(scope="session")
def ding_image(kubeconfig: Path, pytestconfig: pytest.Config) -> str:
    """The DI-engine image (ci/images/di-engine), built if its inputs changed and imported into the local
    real node's containerd once per session (not by cluster-up itself: ~5 GB; the session starts the import
    in the background right after it when the archive is built). Progress goes to the terminal."""
    dev = Cluster(Settings.from_environ())
    socket = realnode.node_files(dev.state).containerd_socket
    if kubeconfig.resolve() != dev.kubeconfig.resolve() or not socket.exists():
        pytest.skip(f"the DI-engine image is imported into the local real node only (no {socket})")
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")

    def progress(line: str) -> None:
        with capture.global_and_fixture_disabled():
            print(f"[di-engine image] {line}", flush=True)

    took: float | None = None  # the import started at cluster-up, if one was
    pending = pytestconfig.stash.get(DING_IMAGE_IMPORT, None)
    if pending is None and background_build(dev.settings) is not None:
        pending = BuildThenImport(dev.settings, socket, realnode.CONTAINERD_NAMESPACE)
    if pending is not None:
        if DING_IMAGE_IMPORT in pytestconfig.stash:
            del pytestconfig.stash[DING_IMAGE_IMPORT]
        if pending.running():
            what = "background build (make test), then import" if isinstance(pending, BuildThenImport) else "import"
            progress(f"waiting for its {what} into the real node's containerd, started at cluster-up")
        took = pending.wait()  # a failed build or import raises here with its log's end
    report = ensure_ding_image(dev.settings, socket, realnode.CONTAINERD_NAMESPACE, progress)
    if took is not None and report.imported_seconds is None:
        report = replace(report, imported_seconds=took)
    built = "cached" if report.built_seconds is None else f"built in {report.built_seconds:.0f}s"
    loaded = "already there" if report.imported_seconds is None else f"imported in {report.imported_seconds:.0f}s"
    loaded += " (in the background from cluster-up)" if took is not None else ""
    progress(f"{report.image.name}: {built}, {loaded}, archive {report.archive_bytes / 2**30:.2f} GiB")
    return report.image.name


@pytest.fixture(scope="session")
def kueue(kubeconfig: Path) -> Iterator[Kueue]:
    """Kueue's manager on the local control plane (`python -m ci.devcluster kueue-up`: built on first use,
    ~15 CPU-minutes cold), started once for the session with $DIHERA_KUEUE_FEATURE_GATES added to its
    configuration, and stopped (kueue-down) at its end unless it ran before or $DIHERA_KEEP_CLUSTER is 1.
    Skipped on $KUBECONFIG's cluster: Kueue is not installed into a cluster this suite did not make."""
    dev = Cluster(Settings.from_environ())
    if kubeconfig.resolve() != dev.kubeconfig.resolve():
        pytest.skip(f"Kueue is started on the local control plane only ($KUBECONFIG is {kubeconfig})")
    manager = Kueue(dev.settings)
    started_here = not manager.running() and not KEPT
    manager.up(parse_feature_gates(os.environ.get("DIHERA_KUEUE_FEATURE_GATES", "")))
    try:
        yield manager
    finally:
        if started_here:
            manager.down()


@pytest.fixture
def kueue_queues(kueue: Kueue, cluster: client.ApiClient, namespace: str) -> Iterator[Callable[..., Queues]]:
    """``kueue_queues(cpu, memory="64Gi", priority_classes=None, preemption="LowerPriority")``: a
    ResourceFlavor, a ClusterQueue with that quota admitting from the test's namespace, its LocalQueue
    and WorkloadPriorityClasses (tests/integration/kueue.py, create_queues); deleted after the test."""
    made: list[Queues] = []

    def make(
        cpu: str,
        memory: str = "64Gi",
        priority_classes: dict[str, int] | None = None,
        preemption: str = "LowerPriority",
    ) -> Queues:
        queues = create_queues(cluster, namespace, cpu, memory, priority_classes, preemption)
        made.append(queues)
        return queues

    try:
        yield make
    finally:
        for queues in made:
            delete_queues(cluster, queues)


# -- the controller and the di-server (their helpers: controllers.py, servers.py) -------------------------------


@pytest.fixture(scope="session")
def controller_kubeconfig(
    kubeconfig: Path, cluster: client.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A kubeconfig holding a token of the chart's controller ServiceAccount (RBAC applied from the chart: its
    ClusterRole, and its Role for the leader-election Lease in the release's namespace)."""
    rendered = subprocess.run(
        [helm_path(), "template", "dihera", str(REPO / "charts/dihera"), "-n", SA_NAMESPACE, "--kube-version",
         pair()[0]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] in RBAC_KINDS]
    mine = [d for d in docs if d["metadata"]["name"] in (SA_NAME, f"{SA_NAME}-leader-election")]
    assert {d["kind"] for d in mine} >= {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role"}, (
        "chart lacks controller RBAC"
    )
    core = client.CoreV1Api(cluster)
    try:
        core.create_namespace({"metadata": {"name": SA_NAMESPACE}})
    except ApiException as err:
        if err.status != 409:
            raise
    kubectl(kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(mine))
    token = core.create_namespaced_service_account_token(
        SA_NAME, SA_NAMESPACE, {"spec": {"expirationSeconds": 4 * 3600}}
    ).status.token
    admin = yaml.safe_load(kubeconfig.read_text())
    ctx = next(c for c in admin["contexts"] if c["name"] == admin["current-context"])["context"]
    cluster_entry = next(c for c in admin["clusters"] if c["name"] == ctx["cluster"])
    sa_config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster_entry],
        "users": [{"name": SA_NAME, "user": {"token": token}}],
        "contexts": [{"name": SA_NAME, "context": {"cluster": cluster_entry["name"], "user": SA_NAME}}],
        "current-context": SA_NAME,
    }
    path = tmp_path_factory.mktemp("sa") / "kubeconfig"
    path.write_text(yaml.safe_dump(sa_config))
    return path


@pytest.fixture
def controller(controller_kubeconfig: Path, dijob_crd: None, namespace: str, tmp_path: Path) -> Iterator[Controller]:
    """``dihera controller`` as the chart's ServiceAccount watching the test's namespace; fails the test when
    the controller logged a 403 (a permission the chart lacks)."""
    ctl = Controller(controller_kubeconfig, namespace, tmp_path / "controller.log")
    ctl.start()
    try:
        yield ctl
    finally:
        ctl.kill(signal.SIGTERM)
        print(ctl.logs()[-6000:])  # shown by pytest when the test failed
        errors = denied(ctl.logs())
        assert not errors, f"the controller lacked a permission:\n{errors[0]}"


@pytest.fixture(scope="session")
def server_kubeconfig(kubeconfig: Path, cluster: client.ApiClient, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig of ``dihera-system:dihera-server`` with the chart's default (cluster-wide) RBAC."""
    path, _ = install_server_rbac(kubeconfig, cluster, tmp_path_factory.mktemp("server-sa"))
    return path


@pytest.fixture
def server(server_kubeconfig: Path, namespace: str) -> Iterator[str]:
    """A di-server as the chart's ServiceAccount, serving the test namespace; yields its URL."""
    with running_server(ServerSettings(namespaces=(namespace,), auth_cache_seconds=0.0), server_kubeconfig) as url:
        yield url


@pytest.fixture
def ui_server(cluster: client.ApiClient, server_kubeconfig: Path, namespace: str) -> Iterator[str]:
    """The di-server on the port Argo's links name (anonymous views), serving the test namespace."""
    (first, *_) = argo_ui_config(cluster)["links"]
    where = urlsplit(first["url"])
    assert where.hostname == "127.0.0.1" and where.port, first
    settings = ServerSettings(namespaces=(namespace,), anonymous_views=True, auth_cache_seconds=0.0)
    tls = local_tls() if where.scheme == "https" else None  # the links say https: as the chart's di-server
    with running_server(settings, server_kubeconfig, where.port, tls) as url:
        yield url
