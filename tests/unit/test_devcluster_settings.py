"""The dev cluster's Settings pick the (Kubernetes, Argo) pair; ci/build-tools.sh agrees on where it lives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `ci` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(REPO))

from ci.devcluster import Settings  # noqa: E402
from ci.devcluster.processes import names_path  # noqa: E402
from ci.devcluster.settings import read_versions  # noqa: E402
from ci.devcluster.state import PORT_NAMES  # noqa: E402

PINNED = read_versions()


def build_tools_pair_dir(cache: Path, *versions: str) -> Path:
    out = subprocess.run(
        ["bash", str(REPO / "ci" / "build-tools.sh"), *versions, "--pair-dir"],
        env={"DIHERA_CACHE": str(cache), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def test_default_pair_comes_from_versions_env(tmp_path: Path) -> None:
    settings = Settings.from_environ({"DIHERA_CACHE": str(tmp_path), "HOME": str(tmp_path)})
    assert (settings.kubernetes_version, settings.argo_version) == (
        PINNED["KUBERNETES_VERSION"],
        PINNED["ARGO_VERSION"],
    )
    assert settings.state_dir == REPO / ".devcluster"
    assert settings.binary("kube-apiserver") == settings.pair_dir / "kube-apiserver"
    assert settings.pair_dir == build_tools_pair_dir(tmp_path)


def test_compat_pair_from_the_environment_has_its_own_state_and_programs(tmp_path: Path) -> None:
    environ = {
        "DIHERA_CACHE": str(tmp_path),
        "DIHERA_KUBERNETES_VERSION": PINNED["COMPAT_KUBERNETES_VERSION"],
        "DIHERA_ARGO_VERSION": PINNED["COMPAT_ARGO_VERSION"],
    }
    compat, default = Settings.from_environ(environ), Settings.from_environ({"DIHERA_CACHE": str(tmp_path)})
    assert compat.kubernetes_version == PINNED["COMPAT_KUBERNETES_VERSION"] != default.kubernetes_version
    assert compat.state_dir != default.state_dir and compat.pair_dir != default.pair_dir
    versions = ["--kubernetes", compat.kubernetes_version, "--argo", compat.argo_version]
    assert compat.pair_dir == build_tools_pair_dir(tmp_path, *versions)
    assert compat.build_command[2:6] == versions
    # `make test` runs both rows' clusters at once: their port ranges must not meet.
    assert default.first_port + len(PORT_NAMES) < compat.first_port
    assert compat.first_port + len(PORT_NAMES) < 32768  # below Linux's ephemeral ports


def test_a_stray_is_a_process_of_this_state_directory_not_of_one_whose_name_starts_the_same() -> None:
    root = "/repo/.devcluster"
    assert names_path("--data-dir=/repo/.devcluster/etcd", root)
    assert names_path("/repo/.devcluster", root)
    assert names_path("--config=/repo/.devcluster/kwok.yaml,/other", root)
    assert not names_path("--data-dir=/repo/.devcluster-v1.35.4_v3.7.18/etcd", root)
    assert names_path("/repo/.devcluster-v1.35.4_v3.7.18/a,/repo/.devcluster/b", root)
