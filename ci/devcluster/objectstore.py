"""The real node's object store: SeaweedFS's `weed mini` on the host's loopback, Argo's artifact repository
and log archive (pure: no I/O).

`weed mini` runs a master, a volume server, a filer and the S3 gateway in one process, every port on
127.0.0.1. Pods and argo server meet it at ENDPOINT, an address of the real node's network namespace that
netns-forward relays to the gateway's loopback port (argo server runs in that namespace too, so the
endpoint Argo records in a Workflow's status is the one every reader uses). The credentials are fixed and
local: the gateway enforces them (signatures are checked), Argo's executors and argo server take them from
their environment (`useSDKCreds`), so no Secret is needed in a job's namespace.
"""

from __future__ import annotations

from pathlib import Path

from . import realnode

__all__ = [
    "BUCKET",
    "CREDENTIALS",
    "ENDPOINT",
    "PORT_NAMES",
    "argo_config",
    "command",
    "executor_env",
    "forward",
    "health_url",
]

BUCKET = "dihera-artifacts"
ENDPOINT = f"{realnode.OBJECT_STORE_IP}:8333"  # 8333: the S3 gateway's usual port
#: The gateway's one identity (weed mini creates it from these variables), and every client's.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "dihera", "AWS_SECRET_ACCESS_KEY": "dihera-local-only"}
REGION = "us-east-1"
#: weed mini's listeners, by our port name: all on 127.0.0.1 (its defaults would take fixed ports; its
#: iceberg and lance listeners are off).
PORT_FLAGS = {
    "store-master": "master.port",
    "store-master-grpc": "master.port.grpc",
    "store-volume": "volume.port",
    "store-volume-grpc": "volume.port.grpc",
    "store-filer": "filer.port",
    "store-filer-grpc": "filer.port.grpc",
    "store-s3": "s3.port",
    "store-s3-grpc": "s3.port.grpc",
    "store-admin": "admin.port",
    "store-admin-grpc": "admin.port.grpc",
}
PORT_NAMES = tuple(PORT_FLAGS)


def command(weed: Path, data: Path, ports: dict[str, int]) -> list[str]:
    """`weed mini` bound to loopback, its data under `data`, creating BUCKET on start."""
    port_flags = [f"-{flag}={ports[name]}" for name, flag in PORT_FLAGS.items()]
    return [
        str(weed),
        "mini",
        f"-dir={data}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        *port_flags,
        "-admin.ui=false",
        "-admin.port.legacy=0",
        "-webdav=false",
        "-master.telemetry=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-bucket={BUCKET}",
    ]


def health_url(ports: dict[str, int]) -> str:
    """The S3 gateway answers 200 here once it serves (its health check)."""
    return f"http://127.0.0.1:{ports['store-s3']}/healthz"


def forward(ports: dict[str, int]) -> str:
    """netns-forward's -f argument: ENDPOINT inside NETNS to the gateway on the host's loopback."""
    return f"{realnode.NETNS_PATH},{ENDPOINT},host,127.0.0.1:{ports['store-s3']}"


def argo_config() -> dict[str, str]:
    """Keys of Argo's ConfigMap: the artifact repository (with the logs of every pod archived) and the
    executors' credentials."""
    repository = (
        "archiveLogs: true\n"
        "s3:\n"
        f"  bucket: {BUCKET}\n"
        f"  endpoint: {ENDPOINT}\n"
        "  insecure: true\n"
        f"  region: {REGION}\n"
        "  useSDKCreds: true\n"
        "  keyFormat: '{{workflow.namespace}}/{{workflow.name}}/{{pod.name}}'\n"
    )
    return {"artifactRepository": repository}


def executor_env() -> str:
    """The `env:` lines of Argo's executor container (YAML)."""
    lines = [f"  - name: {k}\n    value: {v}\n" for k, v in {**CREDENTIALS, "AWS_REGION": REGION}.items()]
    return "env:\n" + "".join(lines)
