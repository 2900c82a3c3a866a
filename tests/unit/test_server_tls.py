"""The CLI's calls to an HTTPS di-server (issue 42): the certificate checked against ``--ca-file`` (or the
system's CAs), an untrusted one refused at once and never sent again, plain HTTP to a TLS port refused.

A real uvicorn server with TLS on loopback, its CA and certificate made with the openssl CLI (the chart
makes them with Helm's genCA/genSignedCert; tests/chart/test_chart_tls.py)."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dihera.cli import main
from dihera.cli.server_calls import Retry, send, tls_context, untrusted
from dihera.constants import HEADER_IDEMPOTENCY_KEY

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "cartpole"))
from cartpole_dqn.metrics import http_sender, profilings_url


def make_pki(folder: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate it signs for 127.0.0.1 and localhost: (ca.crt, tls.crt, tls.key)."""
    ca_key, ca, key, csr, crt = (folder / n for n in ("ca.key", "ca.crt", "tls.key", "tls.csr", "tls.crt"))
    ext = folder / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for cmd in (
        [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            ca_key,
            "-out",
            ca,
            "-days",
            "1",
            "-subj",
            "/CN=test-ca",
        ],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=di-server"],
        [
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            ca,
            "-CAkey",
            ca_key,
            "-CAcreateserial",
            "-out",
            crt,
            "-days",
            "1",
            "-extfile",
            ext,
        ],
    ):
        subprocess.run(["openssl", *map(str, cmd)], check=True, capture_output=True)
    return ca, crt, key


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: What the fake di-server saw: one entry per request that reached it.
SEEN: list[str] = []


async def replicas(request: Request) -> JSONResponse:
    SEEN.append(request.headers.get(HEADER_IDEMPOTENCY_KEY, ""))
    return JSONResponse({"data": {"replicas": (await request.json())["replicas"]}})


async def profilings(request: Request) -> JSONResponse:
    SEEN.append(json.dumps(await request.json()))
    return JSONResponse({"data": {}})


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def https_url(pki: tuple[Path, Path, Path]) -> Iterator[str]:
    _, crt, key = pki
    app = Starlette(
        routes=[
            Route("/v1/namespaces/{ns}/dijobs/{name}/tasks/{task}/replicas", replicas, methods=["PUT"]),
            Route("/v2alpha1/job/{job}/profilings", profilings, methods=["POST"]),
        ]
    )
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", ssl_certfile=str(crt), ssl_keyfile=str(key)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"https://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_with_the_ca_the_request_is_answered(https_url: str, pki: tuple[Path, Path, Path]) -> None:
    ca, _, _ = pki
    url = f"{https_url}/v1/namespaces/rl/dijobs/j/tasks/collector/replicas"
    resp = send("PUT", url, key="k1", headers={}, json={"replicas": 3}, verify=tls_context(str(ca)))
    assert resp.status_code == 200 and resp.json() == {"data": {"replicas": 3}}


def test_an_untrusted_certificate_is_refused_at_once_and_not_sent_again(https_url: str) -> None:
    SEEN.clear()
    url = f"{https_url}/v1/namespaces/rl/dijobs/j/tasks/collector/replicas"
    lines: list[str] = []
    start = time.monotonic()
    with pytest.raises(httpx.ConnectError) as err:
        send("PUT", url, key="k2", headers={}, json={"replicas": 3}, retry=Retry(seconds=30), say=lines.append)
    assert time.monotonic() - start < 5 and not lines, lines  # no retry: the same certificate would come back
    found = untrusted(err.value)
    assert found is not None and "unable to get local issuer certificate" in found.verify_message
    assert SEEN == [], "nothing reached the server: the TLS handshake failed first"


def test_the_cli_names_the_untrusted_certificate_and_scales_with_the_ca(
    https_url: str, pki: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ca, _, _ = pki
    argv = ["scale", "rl/j", "--task", "collector", "--replicas", "4", "--server", https_url, "--token", "t"]
    assert main([*argv, "--retry-seconds", "30"]) == 1
    err = capsys.readouterr().err
    assert (
        f"{https_url}: its certificate is not trusted by the system's CAs (give the di-server's with --ca-file)" in err
    )
    assert "not sent" in err
    assert main([*argv, "--ca-file", str(ca)]) == 0
    assert '"replicas": 4' in capsys.readouterr().out


def test_a_ca_file_that_is_not_one_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "ca.crt"
    bad.write_text("not a certificate\n")
    argv = ["scale", "rl/j", "--task", "collector", "--replicas", "4", "--server", "https://127.0.0.1:1"]
    assert main([*argv, "--ca-file", str(bad)]) == 2
    assert f"--ca-file: '{bad}' is not a readable PEM file of certificates" in capsys.readouterr().err


def test_plain_http_to_the_tls_port_gets_no_answer(https_url: str) -> None:
    plain = https_url.replace("https://", "http://")
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{plain}/v1/namespaces/rl/dijobs/j", timeout=5)


def test_untrusted_finds_the_check_in_the_chain() -> None:
    inner = ssl.SSLCertVerificationError(1, "certificate verify failed")
    try:
        try:
            raise inner
        except ssl.SSLError as e:
            raise httpx.ConnectError("x") from e
    except httpx.ConnectError as outer:
        assert untrusted(outer) is inner
    assert untrusted(httpx.ConnectError("refused")) is None


def test_the_examples_reports_reach_an_https_di_server_with_di_server_ca(
    https_url: str, pki: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """The CartPole example's reporter (examples/cartpole/cartpole_dqn/metrics.py) trusts DI_SERVER_CA."""
    ca, _, _ = pki
    token = tmp_path / "token"
    token.write_text("t\n")
    url = profilings_url(https_url, "rl/j")
    SEEN.clear()
    http_sender(url, token, timeout=5, ca=ca.read_text())({"evalReturn": 1.0})
    assert SEEN == ['{"evalReturn": 1.0}']
    with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):  # without it: the image's CAs, which refuse it
        http_sender(url, token, timeout=5)({"evalReturn": 2.0})
