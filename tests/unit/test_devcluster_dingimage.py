"""The DI-engine image's build inputs and cache key (ci/devcluster/dingimage.py); no build, no cluster."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ci.devcluster import images  # noqa: E402
from ci.devcluster.dingimage import DING_BUILD, archive_config_digest  # noqa: E402
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
