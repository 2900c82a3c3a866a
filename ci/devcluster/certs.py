"""The dev cluster's PKI, made with the openssl CLI: a CA, one serving cert, client certs, a service-account key."""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CLIENTS", "Client", "ensure_pki"]

SERVER_SANS = (
    "IP:127.0.0.1",
    "DNS:localhost",
    "IP:10.96.0.1",  # first address of --service-cluster-ip-range: the `kubernetes` Service
    "DNS:kubernetes",
    "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc",
    "DNS:kubernetes.default.svc.cluster.local",
    "IP:10.213.1.1",  # the real node's address (realnode.NODE_IP): the kubelet serves this certificate too
)


@dataclass(frozen=True)
class Client:
    """A client certificate: file stem, user name (CN) and groups (O)."""

    stem: str
    user: str
    groups: tuple[str, ...] = ()


# Bootstrap RBAC already binds the controller-manager and scheduler users; the rest are cluster admins.
CLIENTS = (
    Client("admin", "dihera-admin", ("system:masters",)),
    Client("kube-controller-manager", "system:kube-controller-manager"),
    Client("kube-scheduler", "system:kube-scheduler"),
    Client("kwok", "kwok-controller", ("system:masters",)),
    Client("workflow-controller", "argo-workflow-controller", ("system:masters",)),
    Client("argo-server", "argo-server", ("system:masters",)),
    Client("kueue", "kueue-manager", ("system:masters",)),  # started on demand (kueue.py)
    Client("local-path-provisioner", "local-path-provisioner", ("system:masters",)),
    # The real node: its kubelet (Node authorizer), CoreDNS, and the API server calling the kubelet.
    Client("kubelet", "system:node:dihera-real-node", ("system:nodes",)),
    Client("coredns", "dihera-coredns", ("system:masters",)),
    Client("apiserver-kubelet-client", "kube-apiserver-kubelet-client", ("system:masters",)),
)

_REQ_CONFIG = """[req]
distinguished_name = dn
prompt = no
[dn]
CN = dihera-dev-ca
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
"""


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _ec_key(path: Path) -> None:
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path)
    path.chmod(0o600)


def _issue(pki: Path, stem: str, subject: str, extensions: str) -> None:
    key, csr, ext = pki / f"{stem}.key", pki / f"{stem}.csr", pki / f"{stem}.ext"
    _ec_key(key)
    _openssl("req", "-new", "-config", pki / "req.cnf", "-key", key, "-subj", subject, "-out", csr)
    ext.write_text("[v3]\nbasicConstraints = critical,CA:FALSE\n" + extensions)
    _openssl(
        "x509", "-req", "-in", csr, "-CA", pki / "ca.crt", "-CAkey", pki / "ca.key",
        "-set_serial", f"0x{secrets.token_hex(16)}", "-days", "825",
        "-extfile", ext, "-extensions", "v3", "-out", pki / f"{stem}.crt",
    )  # fmt: skip
    csr.unlink()
    ext.unlink()


def ensure_pki(pki: Path) -> None:
    """Create whatever of the PKI is missing under `pki` (idempotent)."""
    (pki / "req.cnf").write_text(_REQ_CONFIG)
    if not (pki / "ca.crt").exists():
        _ec_key(pki / "ca.key")
        _openssl(
            "req", "-x509", "-new", "-config", pki / "req.cnf", "-extensions", "v3_ca",
            "-key", pki / "ca.key", "-days", "3650", "-out", pki / "ca.crt",
        )  # fmt: skip
    if not (pki / "serving.crt").exists():
        _issue(
            pki, "serving", "/CN=dihera-dev-loopback",
            "keyUsage = critical,digitalSignature,keyEncipherment\nextendedKeyUsage = serverAuth\n"
            f"subjectAltName = {','.join(SERVER_SANS)}\n",
        )  # fmt: skip
    for client in CLIENTS:
        if not (pki / f"{client.stem}.crt").exists():
            subject = "".join(f"/O={g}" for g in client.groups) + f"/CN={client.user}"
            _issue(pki, client.stem, subject, "keyUsage = critical,digitalSignature\nextendedKeyUsage = clientAuth\n")
    if not (pki / "sa.key").exists():
        _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", pki / "sa.key")
        (pki / "sa.key").chmod(0o600)
        _openssl("pkey", "-in", pki / "sa.key", "-pubout", "-out", pki / "sa.pub")
