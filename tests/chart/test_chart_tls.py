"""The di-server's HTTPS (server.tls, issue 42): the generated CA and certificate, cert-manager's Certificate, a
Secret of the user's, and plain HTTP only when asked. The certificates are read with the openssl CLI."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from tests.chart.helm import RELEASE_NAMESPACE, Manifest, by_kind, one, render, template

SERVICE = f"dihera-server.{RELEASE_NAMESPACE}.svc"
NAMES = ["dihera-server", f"dihera-server.{RELEASE_NAMESPACE}", SERVICE, f"{SERVICE}.cluster.local", "localhost"]


def deployment(objs: list[Manifest], component: str) -> Manifest:
    return one(objs, "Deployment", f"dihera-{component}")["spec"]["template"]["spec"]


def env(spec: Manifest) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in spec["containers"][0]["env"]}


def openssl(*args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["openssl", *args], input=stdin, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_by_default_a_generated_ca_signs_the_servers_certificate_for_its_service_names(tmp_path: Path) -> None:
    objs = render()
    secret = one(objs, "Secret", "dihera-server-tls", RELEASE_NAMESPACE)
    assert secret["type"] == "kubernetes.io/tls" and set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
    pem = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    for key, data in pem.items():
        (tmp_path / key).write_bytes(data)
    sans = openssl("x509", "-noout", "-ext", "subjectAltName", "-in", str(tmp_path / "tls.crt"))
    assert [f"DNS:{n}" for n in NAMES] + ["IP Address:127.0.0.1"] == sans.split("\n", 1)[1].strip().split(", ")
    assert "OK" in openssl("verify", "-CAfile", str(tmp_path / "ca.crt"), str(tmp_path / "tls.crt"))
    # the key is the certificate's
    modulus = [
        openssl(kind, "-noout", "-modulus", "-in", str(tmp_path / f))
        for kind, f in (("x509", "tls.crt"), ("rsa", "tls.key"))
    ]
    assert modulus[0] == modulus[1]
    # the CA is published for clients, readable by any authenticated user, and only that ConfigMap
    published = one(objs, "ConfigMap", "dihera-server-ca", RELEASE_NAMESPACE)["data"]["ca.crt"]
    assert published.encode() == pem["ca.crt"]
    role = one(objs, "Role", "dihera-server-ca-reader", RELEASE_NAMESPACE)
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["dihera-server-ca"], "verbs": ["get"]}
    ]
    binding = one(objs, "RoleBinding", "dihera-server-ca-reader", RELEASE_NAMESPACE)
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}
    ]


def test_the_server_serves_https_and_the_controller_gives_pods_its_ca() -> None:
    objs = render()
    server, controller = deployment(objs, "server"), deployment(objs, "controller")
    assert env(server)["DIHERA_TLS_CERT_FILE"] == "/etc/dihera/tls/tls.crt"
    assert env(server)["DIHERA_TLS_KEY_FILE"] == "/etc/dihera/tls/tls.key"
    assert "DIHERA_PLAIN_HTTP" not in env(server)
    tls = next(v for v in server["volumes"] if v["name"] == "tls")["secret"]
    assert tls["secretName"] == "dihera-server-tls" and [i["key"] for i in tls["items"]] == ["tls.crt", "tls.key"]
    container = server["containers"][0]
    assert (
        container["livenessProbe"]["httpGet"]["scheme"] == container["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    )
    ca = next(v for v in controller["volumes"] if v["name"] == "server-ca")["secret"]
    assert ca == {"secretName": "dihera-server-tls", "items": [{"key": "ca.crt", "path": "ca.crt"}], "optional": True}
    settings = one(objs, "ConfigMap", "dihera-settings")["data"]
    assert settings["DIHERA_SERVER_CA_FILE"] == "/etc/dihera/server-ca/ca.crt"
    assert settings["DIHERA_SERVER_URL"].startswith("https://")


def test_plain_http_only_when_asked() -> None:
    objs = render({"server": {"tls": {"enabled": False}}})
    server = deployment(objs, "server")
    assert env(server)["DIHERA_PLAIN_HTTP"] == "true" and "DIHERA_TLS_CERT_FILE" not in env(server)
    assert server["containers"][0]["readinessProbe"]["httpGet"]["scheme"] == "HTTP"
    assert not by_kind(objs, "Secret") and not [o for o in by_kind(objs, "ConfigMap") if "-ca" in o["metadata"]["name"]]
    settings = one(objs, "ConfigMap", "dihera-settings")["data"]
    assert settings["DIHERA_SERVER_URL"].startswith("http://") and "DIHERA_SERVER_CA_FILE" not in settings


def test_cert_manager_issues_the_certificate_from_the_given_issuer() -> None:
    issuer = {"kind": "ClusterIssuer", "name": "corp-ca", "group": "cert-manager.io"}
    objs = render({"server": {"tls": {"source": "certManager", "certManager": {"issuerRef": issuer}}}})
    cert = one(objs, "Certificate", "dihera-server", RELEASE_NAMESPACE)["spec"]
    assert cert["secretName"] == "dihera-server-tls" and cert["issuerRef"] == issuer
    assert cert["dnsNames"] == NAMES and cert["ipAddresses"] == ["127.0.0.1"]
    assert cert["privateKey"]["rotationPolicy"] == "Always"
    assert not by_kind(objs, "Secret"), "cert-manager writes the Secret"
    done = template({"server": {"tls": {"source": "certManager"}}})
    assert done.returncode != 0 and "server.tls.certManager.issuerRef" in done.stderr, done.stderr


def test_a_secret_of_the_users() -> None:
    objs = render({"server": {"tls": {"source": "secret", "existingSecret": "corp-tls"}}})
    assert (
        next(v for v in deployment(objs, "server")["volumes"] if v["name"] == "tls")["secret"]["secretName"]
        == "corp-tls"
    )
    assert (
        next(v for v in deployment(objs, "controller")["volumes"] if v["name"] == "server-ca")["secret"]["secretName"]
        == "corp-tls"
    )
    assert not by_kind(objs, "Secret") and not by_kind(objs, "Certificate")
    done = template({"server": {"tls": {"source": "secret"}}})
    assert done.returncode != 0 and "server.tls.existingSecret" in done.stderr, done.stderr


@pytest.mark.parametrize(("tls", "scheme"), [({}, "https"), ({"enabled": False}, None)])
def test_the_service_monitor_scrapes_over_https_with_the_ca(tls: Manifest, scheme: str | None) -> None:
    values = {"metrics": {"serviceMonitor": {"enabled": True}}, "server": {"tls": tls}}
    endpoint = one(render(values), "ServiceMonitor", "dihera-server")["spec"]["endpoints"][0]
    assert endpoint.get("scheme") == scheme
    if scheme:
        assert endpoint["tlsConfig"] == {
            "serverName": SERVICE,
            "ca": {"secret": {"name": "dihera-server-tls", "key": "ca.crt"}},
        }


def test_a_source_not_known_is_refused_by_the_schema() -> None:
    done = template({"server": {"tls": {"source": "acme"}}})
    assert done.returncode != 0 and "/server/tls/source" in done.stderr, done.stderr
