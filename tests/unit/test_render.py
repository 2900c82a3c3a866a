"""Rendering: DAG shape, env of every container, template preservation, determinism, size."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from dihera import RenderSettings, load_job, plan_membership, render
from dihera.manifests import dump_yaml_stream
from tests.builders import container, job, task
from tests.rendered import container_env, dag_task_names, replica_template

EXAMPLES = Path(__file__).resolve().parents[2] / "workflows"


def fqdn(job_name: str, task_name: str, index: int, ns: str = "default") -> str:
    return f"{job_name}-{task_name}-{index}.di-{job_name}.{ns}.svc.cluster.local"


def three_task_job() -> dict:
    return job(task("learner"), task("evaluator"), task("collector", replicas=3), name="dqn")


def test_one_dag_node_per_replica_in_rank_order() -> None:
    rendered = render(load_job(three_task_job()))
    assert dag_task_names(rendered) == ["learner-0", "evaluator-0", "collector-0", "collector-1", "collector-2"]
    templates = [t["name"] for t in rendered.workflow["spec"]["templates"]]
    assert templates == ["dijob", "learner", "evaluator", "collector"]
    assert rendered.workflow["metadata"]["name"] == "dqn"
    assert rendered.workflow["spec"]["entrypoint"] == "dijob"


def test_env_of_every_replica() -> None:
    rendered = render(load_job(three_task_job()), RenderSettings(server_url="http://di:8081"))
    all_nodes = [fqdn("dqn", "learner", 0), fqdn("dqn", "evaluator", 0)]
    all_nodes += [fqdn("dqn", "collector", i) for i in range(3)]
    for rank, (node, task_name, index) in enumerate(
        [("learner-0", "learner", 0), ("evaluator-0", "evaluator", 0)]
        + [(f"collector-{i}", "collector", i) for i in range(3)]
    ):
        env = container_env(rendered, node, "main")
        assert env["DI_JOB_ID"] == "default/dqn"
        assert env["DI_SERVER_URL"] == "http://di:8081"
        assert env["DI_RANK"] == str(rank)
        assert env["DI_TASK_NAME"] == task_name
        assert env["DI_TASK_TYPE"] == task_name
        assert env["DI_TASK_RANK"] == str(index)
        assert env["DI_FQDN"] == fqdn("dqn", task_name, index)
        assert env["DI_NODES"].split(",") == all_nodes
        assert env["DI_NODES"].split(",")[int(env["DI_RANK"])] == env["DI_FQDN"]
        assert env["DI_LEARNER_NODES"] == fqdn("dqn", "learner", 0)
        assert env["DI_EVALUATOR_NODES"] == fqdn("dqn", "evaluator", 0)
        assert env["DI_COLLECTOR_NODES"].split(",") == all_nodes[2:]
        assert env["DI_MEMBERSHIP_GENERATION"] == "1"


def test_hostname_subdomain_labels_and_rank_annotation_per_replica() -> None:
    rendered = render(load_job(three_task_job()))
    t = replica_template(rendered, "collector-2")
    patch = json.loads(t["podSpecPatch"])
    assert patch["hostname"] == "dqn-collector-2"
    assert patch["subdomain"] == "di-dqn"
    assert t["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "dihera",
        "diengine/job": "dqn",
        "diengine/task-name": "collector",
        "diengine/task-type": "collector",
        "diengine/pod": "dqn-collector-2",
    }
    assert t["metadata"]["annotations"]["diengine/rank"] == "4"
    assert t["metadata"]["annotations"]["diengine/task-rank"] == "2"


def test_every_container_gets_the_env_before_its_own() -> None:
    manifest = job(
        {
            "type": "none",
            "name": "worker",
            "template": {
                "spec": {
                    "containers": [
                        container("a", env=[{"name": "X", "value": "$(DI_RANK)"}, {"name": "DI_RANK", "value": "9"}]),
                        container("b"),
                    ]
                }
            },
        }
    )
    manifest["status"] = {"phase": "Running"}  # taken up before validation refused DI_RANK (dihera.reserved)
    rendered = render(load_job(manifest))
    for name in ("a", "b"):
        env = container_env(rendered, "worker-0", name)
        assert env["DI_RANK"] == "0"
        assert env["DI_WORKER_NODES"] == fqdn("job", "worker", 0)
    names = [e["name"] for e in replica_template(rendered, "worker-0")["containerSet"]["containers"][0]["env"]]
    assert names.index("X") > names.index("DI_RANK")
    assert names.count("DI_RANK") == 1  # the user's DI_RANK cannot shadow the real rank


def test_init_containers_get_the_env_and_the_membership_mount() -> None:
    manifest = job(
        {
            "type": "none",
            "name": "worker",
            "replicas": 2,
            "template": {
                "spec": {
                    "initContainers": [
                        container(
                            "wait-for-peers",
                            command=["sh", "-c", "echo $DI_NODES"],
                            env=[{"name": "DI_RANK", "value": "9"}, {"name": "Y", "value": "1"}],
                        )
                    ],
                    "containers": [container("main")],
                }
            },
        }
    )
    manifest["status"] = {"phase": "Running"}  # taken up before validation refused DI_RANK (dihera.reserved)
    rendered = render(load_job(manifest))
    t = replica_template(rendered, "worker-1")
    wait, init = t["initContainers"]  # dihera's peer wait first (tests/unit/test_render_peer_wait.py)
    assert wait["name"] == "dihera-wait-peers"
    main_env = t["containerSet"]["containers"][0]["env"]
    assert init["env"][: len(main_env)] == main_env  # the same DI_* variables, in the same order, first
    assert init["env"][len(main_env) :] == [{"name": "Y", "value": "1"}]  # the user's DI_RANK cannot shadow it
    assert {e["name"]: e.get("value") for e in init["env"]}["DI_RANK"] == "1"
    assert init["volumeMounts"] == [
        {"name": "dihera-membership", "mountPath": "/etc/dihera/membership", "readOnly": True}
    ]


def test_task_name_with_dash_becomes_env_name() -> None:
    rendered = render(load_job(job(task("none", name="replay-buffer", replicas=2))))
    assert container_env(rendered, "replay-buffer-1", "main")["DI_REPLAY_BUFFER_NODES"].count(",") == 1


def test_pod_template_is_kept_whole() -> None:
    example = yaml.safe_load((EXAMPLES / "multi-container.yaml").read_text())
    source = example["spec"]["tasks"][0]["template"]
    rendered = render(load_job(example))
    t = replica_template(rendered, "learner-0")
    containers = t["containerSet"]["containers"]
    assert [c["name"] for c in containers] == ["learner", "metrics-exporter"]
    learner = containers[0]
    src = source["spec"]["containers"][0]
    for key in ("image", "command", "args", "envFrom"):
        assert learner[key] == src[key]
    assert learner["resources"] == {"limits": {"nvidia.com/gpu": "1", "memory": "16Gi"}}
    assert {"name": "MY_ADDRESS", "value": "$(DI_FQDN):22270"} in learner["env"]
    assert {"name": "work", "mountPath": "/work"} in learner["volumeMounts"]
    assert containers[1]["ports"] == [{"containerPort": 9100, "name": "metrics"}]
    (_, init), (src_init,) = t["initContainers"], source["spec"]["initContainers"]  # after dihera's peer wait
    assert {k: init[k] for k in src_init if k != "volumeMounts"} == {
        k: v for k, v in src_init.items() if k != "volumeMounts"
    }
    assert init["volumeMounts"][0] == src_init["volumeMounts"][0]  # kept, the membership mount added after
    assert t["nodeSelector"] == {"accelerator": "a100"}
    assert t["tolerations"] == source["spec"]["tolerations"]
    assert t["serviceAccountName"] == "learner"
    assert t["securityContext"] == {"runAsUser": 1000, "fsGroup": 1000}
    patch = json.loads(t["podSpecPatch"])
    assert patch["imagePullSecrets"] == [{"name": "registry"}]
    assert patch["terminationGracePeriodSeconds"] == 60
    assert t["metadata"]["labels"]["team"] == "rl"
    assert t["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert [v["name"] for v in t["volumes"]] == ["work", "dqn-main", "dihera-membership"]


def test_job_volumes_are_added_to_every_task() -> None:
    example = yaml.safe_load((EXAMPLES / "atari-dqn.yaml").read_text())
    rendered = render(load_job(example))
    for node in ("learner-0", "evaluator-0", "collector-1"):
        volumes = replica_template(rendered, node)["volumes"]
        assert volumes[0] == {"name": "cache-volume", "emptyDir": {"medium": "Memory", "sizeLimit": "128Mi"}}


def test_service_and_membership_configmap() -> None:
    rendered = render(load_job(three_task_job()))
    svc = rendered.service
    assert svc["metadata"]["name"] == "di-dqn"
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {"diengine/job": "dqn"}
    assert svc["spec"]["ports"] == [{"name": "di-port", "port": 22270, "targetPort": 22270, "protocol": "TCP"}]
    data = rendered.configmap["data"]
    assert json.loads(data["membership.json"])["generation"] == 1
    assert [o["kind"] for o in rendered.objects()] == ["ConfigMap", "Service", "Workflow"]


def test_clean_pod_policy_and_backoff_limit_map_onto_argo() -> None:
    def spec(**kw: object) -> dict:
        return render(load_job(job(task("learner"), **kw))).workflow["spec"]

    assert spec(cleanPodPolicy="All")["podGC"] == {"strategy": "OnWorkflowCompletion"}
    assert "podGC" not in spec(cleanPodPolicy="Running")
    assert "podGC" not in spec(cleanPodPolicy="None")
    learner = next(t for t in spec(backoffLimit=2)["templates"] if t["name"] == "learner")
    assert learner["retryStrategy"] == {"limit": 2, "retryPolicy": "Always"}
    learner = next(t for t in spec(backoffLimit=0)["templates"] if t["name"] == "learner")
    assert "retryStrategy" not in learner


def test_owner_references_once_the_job_has_a_uid() -> None:
    manifest = job(task("learner"))
    manifest["metadata"]["uid"] = "1234"
    for obj in render(load_job(manifest)).objects():
        (owner,) = obj["metadata"]["ownerReferences"]
        assert owner["uid"] == "1234" and owner["kind"] == "DIJob" and owner["controller"] is True
    assert "ownerReferences" not in render(load_job(job(task("learner")))).workflow["metadata"]


def test_argo_ui_annotations_and_labels() -> None:
    manifest = three_task_job()
    manifest["metadata"]["labels"] = {"experiment": "pong"}
    meta = render(load_job(manifest)).workflow["metadata"]
    assert meta["annotations"]["workflows.argoproj.io/title"] == "DIJob dqn"
    assert "| collector | collector | 3 |" in meta["annotations"]["workflows.argoproj.io/description"]
    assert meta["labels"]["experiment"] == "pong"
    assert meta["labels"]["diengine/job"] == "dqn"


def test_rendering_is_deterministic() -> None:
    texts = {
        dump_yaml_stream(render(load_job(yaml.safe_load((EXAMPLES / "atari-dqn.yaml").read_text()))).objects())
        for _ in range(3)
    }
    assert len(texts) == 1


def test_two_thousand_collectors_stay_well_under_one_mebibyte() -> None:
    manifest = job(task("learner"), task("collector", replicas=2000), task("evaluator"), name="big")
    rendered = render(load_job(manifest))
    sizes = {o["kind"]: len(json.dumps(o)) for o in rendered.objects()}
    assert sizes["Workflow"] < 512 * 1024, sizes
    assert sizes["ConfigMap"] < 512 * 1024, sizes
    # no copy of the node list per replica, nor per task: it lives once in the ConfigMap
    assert "big-collector-1999.di-big" not in json.dumps(rendered.workflow)


def test_scaled_membership_renders_new_ranks_and_keeps_old_ones() -> None:
    j = load_job(three_task_job())
    first = plan_membership(j, None)
    bigger = plan_membership(j.with_replicas("collector", 5), first)
    rendered = render(j.with_replicas("collector", 5), membership=bigger)
    env = container_env(rendered, "collector-4", "main")
    assert env["DI_RANK"] == "6"
    assert env["DI_NODES"].split(",")[6] == env["DI_FQDN"] == fqdn("dqn", "collector", 4)
    assert env["DI_MEMBERSHIP_GENERATION"] == "2"
    assert container_env(rendered, "collector-0", "main")["DI_RANK"] == "2"


def test_extended_resources_only_requested_get_the_same_limit() -> None:
    manifest = job(
        {
            "type": "learner",
            "template": {
                "spec": {
                    "containers": [
                        container(resources={"requests": {"cpu": "1", "nvidia.com/gpu": 1}}),
                        container("b", resources={"requests": {"nvidia.com/gpu": 2}, "limits": {"memory": "1Gi"}}),
                    ]
                }
            },
        }
    )
    containers = replica_template(render(load_job(manifest)), "learner-0")["containerSet"]["containers"]
    assert containers[0]["resources"] == {
        "requests": {"cpu": "1", "nvidia.com/gpu": "1"},
        "limits": {"nvidia.com/gpu": "1"},
    }
    assert containers[1]["resources"]["limits"] == {"memory": "1Gi", "nvidia.com/gpu": "2"}
