"""The local control plane behaves like a real cluster: versions, RBAC, Argo DAGs, Deployments, GC."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from ci.devcluster.manifests import RESTRICTED, SYSTEM_NAMESPACE
from tests.integration.versions import pair

pytestmark = pytest.mark.cluster

ARGO = ("argoproj.io", "v1alpha1")
WORKFLOW_TIMEOUT = 120


# -- helpers -----------------------------------------------------------------------------------------


def container_template(name: str, annotations: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    template: dict[str, Any] = {"name": name, "container": {"image": "busybox", "command": ["true"]}, **extra}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return template


def workflow(name: str, templates: list[dict[str, Any]], entrypoint: str = "main") -> dict[str, Any]:
    return {
        "apiVersion": "/".join(ARGO),
        "kind": "Workflow",
        "metadata": {"name": name},
        "spec": {"entrypoint": entrypoint, "templates": templates},
    }


def dag(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "main", "dag": {"tasks": tasks}}


def run_workflow(api: client.ApiClient, poll: Any, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    """Create a Workflow and return it once it has finished (Succeeded, Failed or Error)."""
    objects = client.CustomObjectsApi(api)
    name = body["metadata"]["name"]
    objects.create_namespaced_custom_object(*ARGO, namespace, "workflows", body)

    def finished() -> dict[str, Any] | None:
        wf: dict[str, Any] = objects.get_namespaced_custom_object(*ARGO, namespace, "workflows", name)
        return wf if wf.get("status", {}).get("phase") in ("Succeeded", "Failed", "Error") else None

    result: dict[str, Any] = poll(finished, WORKFLOW_TIMEOUT, f"Workflow {namespace}/{name} to finish")
    return result


def workflow_pods(api: client.ApiClient, namespace: str, name: str) -> list[client.V1Pod]:
    selector = f"workflows.argoproj.io/workflow={name}"
    return list(client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=selector).items)


def pod_phases_by_node(pods: list[client.V1Pod]) -> dict[str, str]:
    """Argo node name (from the pod annotation) -> pod phase."""
    return {p.metadata.annotations["workflows.argoproj.io/node-name"]: p.status.phase for p in pods}


def nodes_by_display_name(wf: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["displayName"]: n for n in wf["status"]["nodes"].values()}


def missing(read: Any, *args: Any) -> bool:
    try:
        read(*args)
    except ApiException as err:
        if err.status == 404:
            return True
        raise
    return False


# -- the API server ----------------------------------------------------------------------------------


@pytest.mark.compat
def test_version_is_the_pinned_kubernetes(cluster: client.ApiClient) -> None:
    info = client.VersionApi(cluster).get_code()
    assert info.git_version == pair()[0]


def test_the_charts_namespace_enforces_the_restricted_pod_security_standard(cluster: client.ApiClient) -> None:
    """dihera-system (README's and `make demo`'s release namespace) is made with the labels: a pod that is not
    ``restricted`` is refused there by the API server, naming PodSecurity."""
    core = client.CoreV1Api(cluster)
    assert core.read_namespace(SYSTEM_NAMESPACE).metadata.labels.items() >= RESTRICTED.items()
    root = {"metadata": {"name": "pss-probe"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(SYSTEM_NAMESPACE, root, dry_run="All")
    message = json.loads(refused.value.body)["message"]
    assert refused.value.status == 403 and 'violates PodSecurity "restricted:latest"' in message, message


def test_rbac_denies_an_unbound_service_account(cluster: client.ApiClient, namespace: str, poll: Any) -> None:
    core = client.CoreV1Api(cluster)
    core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="nobody"))
    )
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600))
    token = core.create_namespaced_service_account_token("nobody", namespace, request).status.token

    review = client.AuthenticationV1Api(cluster).create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token))
    )
    assert review.status.authenticated, review.status.error
    assert review.status.user.username == f"system:serviceaccount:{namespace}:nobody"

    sa_config = client.Configuration()
    sa_config.host = cluster.configuration.host
    sa_config.ssl_ca_cert = cluster.configuration.ssl_ca_cert
    sa_config.api_key = {"authorization": f"Bearer {token}"}
    with client.ApiClient(sa_config) as as_sa:
        with pytest.raises(ApiException) as denied:
            client.CoreV1Api(as_sa).list_namespaced_pod(namespace)
        assert denied.value.status == 403, denied.value.reason  # authenticated (not 401), not authorized

        # Control: once bound to `view`, the same token may list pods, so RBAC (not a broken token) said no.
        client.RbacAuthorizationV1Api(cluster).create_namespaced_role_binding(
            namespace,
            client.V1RoleBinding(
                metadata=client.V1ObjectMeta(name="nobody-view"),
                role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="view"),
                subjects=[client.RbacV1Subject(kind="ServiceAccount", name="nobody", namespace=namespace)],
            ),
        )

        def may_list() -> bool:
            try:
                client.CoreV1Api(as_sa).list_namespaced_pod(namespace)
            except ApiException as err:
                if err.status == 403:
                    return False
                raise
            return True

        poll(may_list, 30, "the bound service account to list pods")


# -- Argo workflows on simulated pods --------------------------------------------------------------


@pytest.mark.compat
def test_diamond_dag_succeeds(cluster: client.ApiClient, namespace: str, poll: Any) -> None:
    body = workflow(
        "diamond",
        [
            dag([
                {"name": "A", "template": "step"},
                {"name": "B", "template": "step", "dependencies": ["A"]},
                {"name": "C", "template": "step", "dependencies": ["A"]},
                {"name": "D", "template": "step", "dependencies": ["B", "C"]},
            ]),
            container_template("step"),
        ],
    )  # fmt: skip
    wf = run_workflow(cluster, poll, namespace, body)

    assert wf["status"]["phase"] == "Succeeded", wf["status"].get("message")
    nodes = nodes_by_display_name(wf)
    assert {n: nodes[n]["phase"] for n in "ABCD"} == dict.fromkeys("ABCD", "Succeeded")
    assert nodes["D"]["startedAt"] >= max(nodes["B"]["finishedAt"], nodes["C"]["finishedAt"])
    pods = workflow_pods(cluster, namespace, "diamond")
    assert pod_phases_by_node(pods) == {f"diamond.{n}": "Succeeded" for n in "ABCD"}
    for pod in pods:
        assert {c.name for c in pod.status.container_statuses} >= {"main", "wait"}
        assert all(c.state.terminated.exit_code == 0 for c in pod.status.container_statuses)


def test_non_zero_exit_code_fails_the_workflow(cluster: client.ApiClient, namespace: str, poll: Any) -> None:
    body = workflow("exit3", [container_template("main", {"sim.dihera.io/exit-code": "3"})])
    wf = run_workflow(cluster, poll, namespace, body)

    assert wf["status"]["phase"] == "Failed"
    (pod,) = workflow_pods(cluster, namespace, "exit3")
    assert pod.status.phase == "Failed"
    codes = {c.name: c.state.terminated.exit_code for c in pod.status.container_statuses}
    assert codes == {"main": 3, "wait": 0}
    assert "exit code 3" in nodes_by_display_name(wf)["exit3"]["message"]


def test_retry_succeeds_on_the_second_attempt(cluster: client.ApiClient, namespace: str, poll: Any) -> None:
    flaky = container_template("flaky", {"sim.dihera.io/fail-attempts": "1"}, retryStrategy={"limit": 2})
    body = workflow("retry", [dag([{"name": "train", "template": "flaky"}]), flaky])
    wf = run_workflow(cluster, poll, namespace, body)

    assert wf["status"]["phase"] == "Succeeded", wf["status"].get("message")
    assert pod_phases_by_node(workflow_pods(cluster, namespace, "retry")) == {
        "retry.train(0)": "Failed",
        "retry.train(1)": "Succeeded",
    }
    nodes = nodes_by_display_name(wf)
    assert (nodes["train(0)"]["phase"], nodes["train(1)"]["phase"]) == ("Failed", "Succeeded")


# -- controllers: Deployments and garbage collection --------------------------------------------------


def deployment(name: str, replicas: int) -> client.V1Deployment:
    labels = {"app": name}
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                # run-seconds 0: were Deployment pods wrongly completed like Workflow pods, it would show at once
                metadata=client.V1ObjectMeta(labels=labels, annotations={"sim.dihera.io/run-seconds": "0"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="app", image="busybox")]),
            ),
        ),
    )


def test_deployment_rolls_out_and_its_pods_stay_running(cluster: client.ApiClient, namespace: str, poll: Any) -> None:
    apps, core = client.AppsV1Api(cluster), client.CoreV1Api(cluster)
    apps.create_namespaced_deployment(namespace, deployment("web", 3))

    def rolled_out() -> bool:
        status = apps.read_namespaced_deployment_status("web", namespace).status
        return status.available_replicas == 3 and status.updated_replicas == 3

    poll(rolled_out, 60, "Deployment web to have 3 available replicas")
    pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
    assert len(pods) == 3
    for pod in pods:
        assert pod.status.phase == "Running"
        assert pod.status.pod_ip
        assert pod.spec.node_name.startswith("kwok-node-")
        assert pod.status.container_statuses[0].state.running is not None


def test_deleting_an_owner_collects_its_dependents(cluster: client.ApiClient, namespace: str, poll: Any) -> None:
    core = client.CoreV1Api(cluster)
    owner = core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner")))
    reference = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
    core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="child", owner_references=[reference]))
    )
    core.delete_namespaced_config_map("owner", namespace)
    poll(lambda: missing(core.read_namespaced_config_map, "child", namespace), 60, "ConfigMap child to be collected")


def test_deleting_a_deployment_collects_replicasets_and_pods(
    cluster: client.ApiClient, namespace: str, poll: Any
) -> None:
    apps, core = client.AppsV1Api(cluster), client.CoreV1Api(cluster)
    apps.create_namespaced_deployment(namespace, deployment("gone", 2))
    poll(lambda: len(core.list_namespaced_pod(namespace, label_selector="app=gone").items) == 2, 60, "2 pods")

    apps.delete_namespaced_deployment("gone", namespace, propagation_policy="Background")
    poll(lambda: not apps.list_namespaced_replica_set(namespace).items, 60, "ReplicaSets to be collected")
    poll(lambda: not core.list_namespaced_pod(namespace).items, 60, "pods to be collected and deleted")
