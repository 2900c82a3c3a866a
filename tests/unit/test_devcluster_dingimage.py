"""The DI-engine image's build inputs, cache key and background import (ci/devcluster/dingimage.py); no
build, no cluster: the import runs a stand-in `ctr` put first on PATH."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ci.devcluster import dingimage, images  # noqa: E402
from ci.devcluster.dingimage import (  # noqa: E402
    BG_SH,
    BUILD_JOB,
    DING_BUILD,
    BuildThenImport,
    ImageImport,
    archive_config_digest,
    background_build,
    start_import,
)
from ci.devcluster.settings import Settings  # noqa: E402


def settings(repo: Path) -> Settings:
    return Settings(kubernetes_version="v0", argo_version="v0", repo=repo, cache_dir=repo / "cache")


def test_every_path_the_dockerfile_copies_or_mounts_is_a_cache_key_input() -> None:
    dockerfile = (REPO / DING_BUILD.dockerfile).read_text()
    used = re.findall(r"^COPY (\S+)", dockerfile, re.M) + re.findall(r"type=bind,source=([^,\s]+)", dockerfile)
    assert used, "no COPY or bind mount found: the pattern is out of date"
    for path in used:
        assert any(Path(path).is_relative_to(i) for i in DING_BUILD.inputs), (path, DING_BUILD.inputs)
        assert (REPO / path).exists(), path
    # the wheels are downloaded into a build cache mount (kept across rebuilds, never in the image) and
    # installed from there only
    mount = re.search(r"--mount=type=cache,[^\s]*target=(\S+?)[,\s]", dockerfile)
    assert mount, "no cache mount"
    assert f"pip download --no-deps --dest {mount[1]} " in dockerfile
    assert f"pip install --no-deps --no-index --find-links {mount[1]} " in dockerfile


def test_cache_key_follows_the_inputs_only(tmp_path: Path) -> None:
    for name in (*DING_BUILD.inputs, "dihera"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "ci/images/di-engine/Dockerfile").write_text("FROM x\n")
    (tmp_path / "examples/cartpole/cartpole_dqn/main.py").write_text("print(1)\n")
    base = images.Image(images.PYTHON_IMAGE, tmp_path / "python-0123.tar")
    key = images.dockerfile_archive(settings(tmp_path), DING_BUILD, base)
    assert key.parent == tmp_path / "cache" / "images" and key.name.startswith("di-engine-")

    (tmp_path / "dihera" / "x.py").write_text("unrelated\n")
    (tmp_path / "examples/cartpole/README.md").write_text("docs only\n")  # not copied into the image
    assert images.dockerfile_archive(settings(tmp_path), DING_BUILD, base) == key
    (tmp_path / "examples/cartpole/cartpole_dqn/main.py").write_text("print(2)\n")
    changed = images.dockerfile_archive(settings(tmp_path), DING_BUILD, base)
    assert changed != key
    other_base = images.Image(images.PYTHON_IMAGE, tmp_path / "python-4567.tar")
    assert images.dockerfile_archive(settings(tmp_path), DING_BUILD, other_base) not in (key, changed)


def test_config_digest_is_read_from_the_archives_manifest(tmp_path: Path) -> None:
    layer = tmp_path / "layer.tar"
    with tarfile.open(layer, "w") as tar:
        tar.add(__file__, arcname="x.py")
    out = tmp_path / "image.tar"
    images.write_docker_archive(out, "dihera.local/x:1", layer, {"Cmd": ["true"]})
    with tarfile.open(out) as archive:
        manifest = json.load(archive.extractfile("manifest.json"))  # type: ignore[arg-type]
        config = archive.extractfile(manifest[0]["Config"]).read()  # type: ignore[union-attr]
    assert archive_config_digest(out) == f"sha256:{hashlib.sha256(config).hexdigest()}"


def fake_ctr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    """A `ctr` first on PATH that records its arguments in `argv` and then runs `body` (sh)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "ctr"
    script.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "argv"}\n{body}\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin")
    return tmp_path / "argv"


def test_an_import_runs_while_the_caller_goes_on_and_reports_its_own_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = fake_ctr(tmp_path, monkeypatch, "sleep 0.5")
    image = images.Image("dihera.local/di-engine:0", tmp_path / "di-engine-1234.tar")
    started = time.monotonic()
    pending = ImageImport(image, tmp_path / "containerd.sock", "k8s.io")
    assert pending.running() and time.monotonic() - started < 0.4  # not waited for at start
    time.sleep(1.0)  # the caller's other work, longer than the import
    assert not pending.running()
    took = pending.wait()
    assert 0.5 <= took < 0.95, took  # the import's time, not the caller's
    assert argv.read_text().split() == [
        f"--address={tmp_path / 'containerd.sock'}",
        "--namespace=k8s.io",
        "images",
        "import",
        str(image.archive),
    ]


def test_a_failed_import_raises_with_ctrs_exit_code_and_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_ctr(tmp_path, monkeypatch, "echo 'ctr: content digest mismatch' >&2; exit 3")
    pending = ImageImport(images.Image("x:0", tmp_path / "x.tar"), tmp_path / "sock", "k8s.io")
    with pytest.raises(RuntimeError, match=r"x\.tar exited 3: ctr: content digest mismatch"):
        pending.wait()


def test_cancel_stops_an_import_nobody_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_ctr(tmp_path, monkeypatch, "exec sleep 60")
    pending = ImageImport(images.Image("x:0", tmp_path / "x.tar"), tmp_path / "sock", "k8s.io")
    started = time.monotonic()
    pending.cancel()
    assert not pending.running() and time.monotonic() - started < 10
    with pytest.raises(RuntimeError, match="exited -15"):
        pending.wait()


def test_no_import_starts_before_the_images_are_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = fake_ctr(tmp_path, monkeypatch, "exit 0")
    built = settings(tmp_path)
    assert start_import(built, tmp_path / "sock", "k8s.io") is None  # no base image: nothing built, no ctr
    assert not built.images_dir.exists() and not argv.exists()


def start_job(jobs: Path, *command: str) -> None:
    """`ci/bg.sh start di-engine-image COMMAND...` with its files in `jobs`."""
    env = {**os.environ, "DIHERA_BG_DIR": str(jobs)}
    subprocess.run(["bash", str(BG_SH), "start", BUILD_JOB, *command], check=True, env=env, capture_output=True)


def test_the_import_waits_for_the_background_build_then_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make test` builds the image in a ci/bg.sh job beside the first tests: while it runs it is found,
    the session's import waits for its end and only then looks for the archive to import."""
    jobs, environ = tmp_path / "bg", {"DIHERA_BG_DIR": str(tmp_path / "bg")}
    s = settings(tmp_path)
    assert background_build(s, environ) is None  # never started
    started_at: list[float] = []
    monkeypatch.setattr(dingimage, "start_import", lambda *_: started_at.append(time.monotonic()))
    start_job(jobs, "sleep", "1.5")
    assert background_build(s, environ) == jobs / f"{BUILD_JOB}.pid"
    before = time.monotonic()
    pending = BuildThenImport(s, tmp_path / "ctr.sock", "k8s.io", environ)
    assert pending.running()
    assert pending.wait() is None  # nothing imported: start_import found nothing to do
    assert started_at and started_at[0] - before >= 1.0, "the import started before the build ended"
    assert background_build(s, environ) is None  # ended


def test_a_failed_background_build_fails_the_wait_with_the_end_of_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs, environ = tmp_path / "bg", {"DIHERA_BG_DIR": str(tmp_path / "bg")}
    monkeypatch.setattr(dingimage, "start_import", lambda *_: pytest.fail("imported after a failed build"))
    start_job(jobs, "bash", "-c", "echo 'pip: no matching distribution for torch'; exit 3")
    with pytest.raises(RuntimeError, match=r"(?s)background build failed.*no matching distribution for torch"):
        BuildThenImport(settings(tmp_path), tmp_path / "ctr.sock", "k8s.io", environ).wait()
