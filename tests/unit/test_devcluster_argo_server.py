"""argo server (the Argo UI) in the dev cluster: which pairs run it, its loopback command line, and the
screenshots of its browser test outliving `cluster-down`."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `ci` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(REPO))

from ci.devcluster import Settings  # noqa: E402
from ci.devcluster.components import ARGO_UI_ENV, argo_ui_url, components  # noqa: E402
from ci.devcluster.settings import argo_server_main, read_versions  # noqa: E402
from ci.devcluster.state import StateDir, pick_ports  # noqa: E402

PINNED = read_versions()


def settings(tmp_path: Path, **environ: str) -> Settings:
    return Settings.from_environ({"DIHERA_CACHE": str(tmp_path), "DIHERA_REAL_NODE": "0", **environ})


def test_the_default_pair_runs_argo_server_bound_to_loopback(tmp_path: Path) -> None:
    s = settings(tmp_path)
    assert s.argo_ui and "argo-server" in s.tools and "argo-server" in s.build_command
    state = StateDir(tmp_path / "state")
    ports = pick_ports(30000)
    server = next(c for c in components(s, state, ports) if c.name == "argo-server")
    assert server.binary == s.pair_dir / "argo-server"
    assert f"--address=127.0.0.1:{ports['argo-server']}" in server.argv
    assert server.health_url == f"{argo_ui_url(ports)}/api/v1/version"
    assert argo_ui_url(ports) == f"http://127.0.0.1:{ports['argo-server']}"
    assert server.env == ARGO_UI_ENV and set(ARGO_UI_ENV.values()) == {"false"}


def test_the_compat_pair_and_an_opt_out_run_none(tmp_path: Path) -> None:
    compat = settings(
        tmp_path,
        DIHERA_KUBERNETES_VERSION=PINNED["COMPAT_KUBERNETES_VERSION"],
        DIHERA_ARGO_VERSION=PINNED["COMPAT_ARGO_VERSION"],
    )
    assert not argo_server_main(PINNED["COMPAT_ARGO_VERSION"]).exists()
    assert argo_server_main(PINNED["ARGO_VERSION"]).is_file()
    for s in (compat, settings(tmp_path, DIHERA_ARGO_UI="0")):
        assert not s.argo_ui and "argo-server" not in s.tools
        assert "argo-server" not in [c.name for c in components(s, StateDir(tmp_path / "state"), pick_ports(30000))]


def test_down_and_a_fresh_up_keep_the_screenshots_and_nothing_else(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    state.create()
    (state.logs / "etcd.log").write_text("x")
    state.screenshots.mkdir()
    (state.screenshots / "workflow-list.png").write_bytes(b"png")
    state.reset()
    assert sorted(p.name for p in state.root.iterdir()) == ["screenshots"]
    state.create()
    state.remove()
    assert [p.name for p in state.root.iterdir()] == ["screenshots"] and not state.exists()
    assert (state.screenshots / "workflow-list.png").read_bytes() == b"png"
    state.reset()  # what `up` does next: the directory holds only what it keeps
    state.create()
    (state.screenshots / "workflow-list.png").unlink()
    state.screenshots.rmdir()
    state.remove()
    assert not state.root.exists()
