"""``dihera server`` settings: flags over the chart's DIHERA_* variables over defaults, bad values named."""

from __future__ import annotations

import pytest

from dihera.cli import build_parser
from dihera.cli.server import settings_from_args
from dihera.server import ServerSettings

#: What the chart's settings ConfigMap gives the server's container (envFrom), watching two namespaces.
CHART_ENV = {
    "DIHERA_SERVER_URL": "http://dihera-server.dihera-system.svc.cluster.local:8081",
    "DIHERA_CLUSTER_DOMAIN": "corp.internal",
    "DIHERA_WATCH_NAMESPACES": "team-a, team-b",
    "DIHERA_LOG_LEVEL": "debug",
    "DIHERA_BIND_ADDRESS": "0.0.0.0",
    "DIHERA_LEASE_NAME": "dihera-controller",
    "DIHERA_SERVER_PORT": "9000",
}


def settings(argv: list[str], env: dict[str, str] | None = None, plain: bool = True) -> ServerSettings:
    """The settings of ``dihera server ARGV`` (with ``--plain-http`` unless ``plain`` is False)."""
    argv = ["--plain-http", *argv] if plain else argv
    return settings_from_args(build_parser().parse_args(["server", *argv]), env or {})


def test_defaults_serve_every_namespace_on_loopback() -> None:
    s = settings([])
    assert s == ServerSettings()
    assert (s.host, s.port, s.namespaces, s.log_level, s.auth) == ("127.0.0.1", 8081, (), "info", True)
    assert s.watches("anything") and s.scope() == "all namespaces"


def test_chart_variables_fill_in_what_flags_leave_out() -> None:
    s = settings([], CHART_ENV)
    assert s.namespaces == ("team-a", "team-b") and s.scope() == "team-a, team-b"
    assert s.watches("team-b") and not s.watches("team-c")
    assert (s.log_level, s.host, s.port, s.cluster_domain) == ("debug", "0.0.0.0", 9000, "corp.internal")


def test_flags_win_over_the_chart_variables() -> None:
    # the chart's Deployment passes --host, --port, --cluster-domain and, for one namespace, --namespace
    argv = ["--host", "0.0.0.0", "--port", "8081", "--namespace", "solo", "--log-level", "WARNING"]
    s = settings(argv, CHART_ENV)
    assert (s.namespaces, s.port, s.log_level) == (("solo",), 8081, "warning")
    assert settings(["-n", "a,b"], CHART_ENV).namespaces == ("a", "b")


@pytest.mark.parametrize(
    ("env", "argv"),
    [
        pytest.param({"DIHERA_WATCH_NAMESPACES": ""}, [], id="empty-list"),
        pytest.param({"DIHERA_WATCH_NAMESPACES": " , "}, [], id="only-commas"),
        pytest.param({"DIHERA_LOG_LEVEL": ""}, [], id="empty-level"),
    ],
)
def test_empty_variables_mean_the_default(env: dict[str, str], argv: list[str]) -> None:
    s = settings(argv, env)
    assert s.namespaces == () and s.log_level == "info"


def test_every_bad_value_is_named_at_once() -> None:
    env = {"DIHERA_WATCH_NAMESPACES": "team-*,ok,Team_B", "DIHERA_LOG_LEVEL": "verbose", "DIHERA_SERVER_PORT": "http"}
    with pytest.raises(ValueError) as err:
        settings([], env)
    message = str(err.value)
    assert "DIHERA_SERVER_PORT: 'http' is not a port number" in message
    assert "namespaces: 'team-*' is not a namespace name" in message and "not patterns" in message
    assert "namespaces: 'Team_B' is not a namespace name" in message and "'ok'" not in message
    assert "log_level: 'verbose' is not one of debug, info, warning, error" in message


def test_settings_refuse_duplicates_and_bad_ports() -> None:
    with pytest.raises(ValueError, match=r"namespaces: 'a, a' names a namespace twice; port: 70000 is not a TCP port"):
        ServerSettings(namespaces=("a", "a"), port=70000)
    with pytest.raises(ValueError, match=r"auth_denied_cache_seconds: -1 is negative \(seconds; 0 turns"):
        ServerSettings(auth_denied_cache_seconds=-1)


def test_the_command_exits_2_naming_the_problem(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["server", "--plain-http", "--log-level", "loud"])
    assert args.func(args) == 2
    assert "dihera server: log_level: 'loud' is not one of" in capsys.readouterr().err


def test_https_with_the_certificate_from_flags_or_the_chart_variables() -> None:
    s = settings(["--tls-cert-file", "/c.crt", "--tls-key-file", "/c.key"], plain=False)
    assert (s.tls_cert_file, s.tls_key_file, s.scheme) == ("/c.crt", "/c.key", "https")
    s = settings([], {"DIHERA_TLS_CERT_FILE": "/e.crt", "DIHERA_TLS_KEY_FILE": "/e.key"}, plain=False)
    assert (s.tls_cert_file, s.tls_key_file) == ("/e.crt", "/e.key")
    assert settings([]).scheme == "http"
    assert settings([], {"DIHERA_PLAIN_HTTP": "true"}, plain=False).tls_cert_file is None


@pytest.mark.parametrize(
    ("argv", "env", "named"),
    [
        pytest.param([], {}, "--tls-cert-file: no certificate", id="neither-tls-nor-plain"),
        pytest.param(
            ["--tls-cert-file", "/c.crt"], {}, "tls_key_file: missing while tls_cert_file is set", id="no-key"
        ),
        pytest.param(
            ["--tls-key-file", "/c.key"], {}, "tls_cert_file: missing while tls_key_file is set", id="no-cert"
        ),
        pytest.param(
            ["--plain-http", "--tls-cert-file", "/c.crt", "--tls-key-file", "/k"],
            {},
            "--plain-http: given with",
            id="plain-and-tls",
        ),
        pytest.param(
            [], {"DIHERA_PLAIN_HTTP": "maybe"}, "DIHERA_PLAIN_HTTP: 'maybe' is not true or false", id="bad-variable"
        ),
    ],
)
def test_plain_http_only_when_asked_and_a_certificate_needs_its_key(
    argv: list[str], env: dict[str, str], named: str
) -> None:
    with pytest.raises(ValueError, match=named.replace("(", r"\(")):
        settings(argv, env, plain=False)
