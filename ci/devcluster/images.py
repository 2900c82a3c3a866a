"""Container images of the real node, built here without a registry or a Docker engine.

Each image is a docker-archive in the cache (`$DIHERA_CACHE/images/`), its file name carrying a hash
of its inputs, so a second build is a file lookup; `ctr images import` loads them into containerd.
- pause: the static `pause` program alone (the sandbox of every pod);
- argoexec: Argo's executor, static, alone (the init and wait containers of Argo's pods);
- python: Debian bookworm minbase with Python 3.11 (mmdebstrap), the base of the project's image and
  of the test pods;
- dihera: the project's own image, from its Dockerfile (buildah, chroot isolation), on that base;
- redis: Debian minbase with Debian's redis-server (mmdebstrap), DI-engine's ``--mq-type redis`` broker.
"""

from __future__ import annotations

import collections
import hashlib
import io
import json
import logging
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .realnode import PAUSE_IMAGE
from .settings import Settings

__all__ = [
    "ARGOEXEC_IMAGE",
    "DIHERA_IMAGE",
    "PYTHON_IMAGE",
    "REDIS_IMAGE",
    "DockerfileBuild",
    "Image",
    "build_all",
    "dockerfile_archive",
    "dockerfile_image",
    "dockerfile_images",
    "import_all",
    "python_archive",
    "python_image",
    "redis_image",
]

log = logging.getLogger("devcluster")

PYTHON_IMAGE = "dihera.local/python:3.11"
ARGOEXEC_IMAGE = "dihera.local/argoexec:local"
DIHERA_IMAGE = "dihera.local/dihera"  # tagged with the package version
DEBIAN_SUITE = "bookworm"  # Debian 12: python3 is 3.11
BASE_PACKAGES = ("python3", "python3-venv", "python3-pip", "python-is-python3", "ca-certificates", "passwd")
#: Debian's Redis server and the client the readiness probe runs (redis-tools comes with redis-server).
REDIS_PACKAGES = ("redis-server",)
REDIS_IMAGE = "dihera.local/redis:7"  # Debian bookworm's redis-server 7.0
BASE_EXCLUDES = ("/usr/share/man/*", "/usr/share/locale/*", "/usr/share/doc/*")
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")  # TLS to the package index is intercepted here
#: Part of a binary image's cache key: bump it when the layer's layout changes, so no archive of the
#: old layout is reused (2: the program is packed as a regular file, never as the pair dir's link).
LAYER_FORMAT = b"single-binary-layer 2"
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Argo runs `argoexec` from PATH
DOCKERFILE_INPUTS = ("Dockerfile", "pyproject.toml", "README.md", "dihera")  # what the Dockerfile COPYs


@dataclass(frozen=True)
class Image:
    name: str  # repository:tag as containerd knows it
    archive: Path  # docker-archive in the cache


def _digest(chunks: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()


def _file_digest(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _file_chunks(paths: Iterable[Path], root: Path) -> Iterable[bytes]:
    for path in sorted(paths):
        yield str(path.relative_to(root)).encode() + b"\0"
        yield path.read_bytes()


def _tree_files(root: Path, names: Iterable[str]) -> list[Path]:
    found: list[Path] = []
    for name in names:
        path = root / name
        tree = path.rglob("*") if path.is_dir() else [path]
        found += [p for p in tree if p.is_file() and "__pycache__" not in p.parts]
    return found


# -- docker-archive -----------------------------------------------------------------------------------


def write_docker_archive(out: Path, name: str, layer: Path, config: dict[str, object]) -> None:
    """A docker-archive of one layer tar: manifest.json, the image config (rootfs.diff_ids) and the layer."""
    diff_id = _file_digest(layer)
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
    }
    config_bytes = json.dumps(image_config).encode()
    config_name = f"{_digest([config_bytes])}.json"
    manifest = [{"Config": config_name, "RepoTags": [name], "Layers": [f"{diff_id}/layer.tar"]}]
    tmp = out.with_suffix(".tmp")
    with tarfile.open(tmp, "w") as archive:
        for member, data in (("manifest.json", json.dumps(manifest).encode()), (config_name, config_bytes)):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        archive.add(layer, arcname=f"{diff_id}/layer.tar")
    tmp.rename(out)


def _single_binary_layer(binary: Path, target: str, layer: Path) -> None:
    """A layer holding `binary` at /`target` and an empty, world-writable /tmp."""
    with tarfile.open(layer, "w") as tar:
        tmp = tarfile.TarInfo("tmp")
        tmp.type, tmp.mode = tarfile.DIRTYPE, 0o1777
        tar.addfile(tmp)
        info = tar.gettarinfo(str(binary), arcname=target)
        if not info.isreg():  # a link would dangle inside the image
            raise ValueError(f"{binary}: not a regular file")
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mode = 0o755
        with binary.open("rb") as f:
            tar.addfile(info, f)


# -- the images -----------------------------------------------------------------------------------


def _prune(archive: Path) -> None:
    """Delete older archives of the same image (`<kind>-<hash>.tar`) once `archive` exists."""
    kind = archive.name.rsplit("-", 1)[0]
    for old in archive.parent.glob(f"{kind}-*.tar"):
        if old != archive and old.name.rsplit("-", 1)[0] == kind:
            old.unlink()


def _binary_image(settings: Settings, program: str, name: str, entrypoint: list[str]) -> Image:
    binary = settings.binary(program).resolve()  # the pair dir links to the versioned build: pack the file
    key = _digest([name.encode(), LAYER_FORMAT, binary.read_bytes()])[:16]
    archive = settings.images_dir / f"{program}-{key}.tar"
    if not archive.exists():
        with tempfile.TemporaryDirectory() as tmp:
            layer = Path(tmp) / "layer.tar"
            _single_binary_layer(binary, entrypoint[0].lstrip("/"), layer)
            config = {"Entrypoint": entrypoint, "Env": [f"PATH={IMAGE_PATH}"], "WorkingDir": "/"}
            write_docker_archive(archive, name, layer, config)
        _prune(archive)
    return Image(name, archive)


def _mmdebstrap_command(packages: Iterable[str] = BASE_PACKAGES) -> list[str]:
    return [
        "mmdebstrap", "--variant=minbase", "--mode=root", "--format=tar",
        f"--include={','.join(packages)}",
        "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
        *(f"--dpkgopt=path-exclude={p}" for p in BASE_EXCLUDES),
        DEBIAN_SUITE,
    ]  # fmt: skip


def _debian_archive(settings: Settings, kind: str, packages: Iterable[str]) -> Path:
    key = _digest([json.dumps(_mmdebstrap_command(packages)).encode()])[:16]
    return settings.images_dir / f"{kind}-{key}.tar"


def python_archive(settings: Settings) -> Path:
    """Where the Python base image's archive is in the cache (its name carries a hash of the command)."""
    return _debian_archive(settings, "python", BASE_PACKAGES)


def _debian_image(
    settings: Settings, name: str, kind: str, packages: Iterable[str], config: dict[str, object]
) -> Image:
    """A Debian minbase image of ``packages``, built with mmdebstrap unless its archive is in the cache."""
    command = _mmdebstrap_command(packages)
    archive = _debian_archive(settings, kind, packages)
    if not archive.exists():
        log.info("building %s with mmdebstrap (cold: about 1-5 minutes)", name)
        start = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            rootfs = Path(tmp) / "rootfs.tar"
            subprocess.run([*command, str(rootfs)], check=True, stdout=subprocess.DEVNULL)
            write_docker_archive(archive, name, rootfs, config)
        _prune(archive)
        log.info("built %s in %.0fs", name, time.monotonic() - start)
    return Image(name, archive)


def python_image(settings: Settings) -> Image:
    """The Debian + Python base image, built with mmdebstrap unless its archive is in the cache."""
    config: dict[str, object] = {"Env": [f"PATH={IMAGE_PATH}", "LANG=C.UTF-8"], "Cmd": ["python3"]}
    return _debian_image(settings, PYTHON_IMAGE, "python", BASE_PACKAGES, config)


def redis_image(settings: Settings) -> Image:
    """Debian's redis-server (the message queue of DI-engine's ``--mq-type redis``, a DIJob's ``none`` task:
    workflows/cartpole-dqn-redis.yaml), run as Debian's ``redis`` user."""
    config: dict[str, object] = {
        "Env": [f"PATH={IMAGE_PATH}", "LANG=C.UTF-8"],
        "Cmd": ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no"],
        "User": "redis",
    }
    return _debian_image(settings, REDIS_IMAGE, "redis", REDIS_PACKAGES, config)


def package_version(settings: Settings) -> str:
    for line in (settings.repo / "pyproject.toml").read_text().splitlines():
        if line.startswith("version = "):
            return line.split("=", 1)[1].strip().strip('"')
    raise RuntimeError("no version in pyproject.toml")


@dataclass(frozen=True)
class DockerfileBuild:
    """An image built from a Dockerfile of the repository by buildah, on the local python base."""

    name: str  # repository:tag as containerd knows it
    kind: str  # the archive's file name prefix in the cache
    dockerfile: str  # relative to the repository root (the build context)
    inputs: tuple[str, ...]  # what the Dockerfile copies or mounts (files or folders): the cache key
    expect: str  # how long a cold build takes, for the log


def _buildah(settings: Settings) -> tuple[list[str], dict[str, str]]:
    """buildah's command prefix and environment: storage and temporary files in the cache, so the
    Dockerfiles' `RUN --mount=type=cache` directories (under $TMPDIR) are kept across builds."""
    tmp = settings.cache_dir / "buildah" / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    command = [
        "buildah",
        f"--root={settings.cache_dir / 'buildah' / 'storage'}",
        f"--runroot={settings.cache_dir / 'buildah' / 'run'}",
        "--storage-driver=overlay",
    ]
    return command, {**settings.build_env, "PATH": settings.path_env, "TMPDIR": str(tmp)}


def _run_streamed(command: list[str], env: dict[str, str], progress: Callable[[str], None]) -> None:
    """Run `command`, passing each line of its output to `progress`; on failure raise with the last lines."""
    tail: collections.deque[str] = collections.deque(maxlen=30)
    start = time.monotonic()
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail.append(line.rstrip())
            progress(f"[{time.monotonic() - start:5.0f}s] {line.rstrip()}")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:6])}... exited {proc.returncode}:\n" + "\n".join(tail))


def dockerfile_archive(settings: Settings, build: DockerfileBuild, base: Image) -> Path:
    """Where `build`'s archive is in the cache: its name carries a hash of the base and of the inputs."""
    inputs = _tree_files(settings.repo, build.inputs)
    key = _digest([base.archive.name.encode(), *_file_chunks(inputs, settings.repo)])[:16]
    return settings.images_dir / f"{build.kind}-{key}.tar"


def dockerfile_image(
    settings: Settings, build: DockerfileBuild, base: Image, progress: Callable[[str], None] | None = None
) -> Image:
    """`build`'s image as a docker-archive in the cache, built when its inputs changed. `progress`, when
    given, receives every line of buildah's output (else the build is quiet)."""
    repo = settings.repo
    inputs = _tree_files(repo, build.inputs)
    archive = dockerfile_archive(settings, build, base)
    if archive.exists():
        return Image(build.name, archive)
    (progress or log.info)(f"building {build.name} from {build.dockerfile} with buildah (cold: {build.expect})")
    start = time.monotonic()
    buildah, env = _buildah(settings)
    with tempfile.TemporaryDirectory(dir=settings.cache_dir / "buildah" / "tmp") as tmp:
        context = Path(tmp) / "context"
        for path in inputs:  # only what the Dockerfile copies: the checkout holds sockets and mounts
            (context / path.relative_to(repo)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, context / path.relative_to(repo))
        base_ref = f"docker-archive:{base.archive}"
        subprocess.run([*buildah, "pull", "--quiet", base_ref], check=True, stdout=subprocess.DEVNULL, env=env)
        # No --layers: with a Dockerfile's bind mount from a builder stage buildah reuses stale layers.
        # The image is committed straight into the docker-archive (the cache), never into buildah's
        # storage (which keeps only the base): no second copy of a big layer on disk, no push.
        tmp_archive = Path(tmp) / "image.tar"
        bud = [
            *buildah, "bud", "--isolation=chroot", *([] if progress else ["--quiet"]),
            f"--file={context / build.dockerfile}",
            f"--build-arg=PYTHON_IMAGE={base.name}",
            f"--volume={HOST_CA_BUNDLE}:/etc/ssl/certs/ca-certificates.crt:ro",
            f"--tag=docker-archive:{tmp_archive}:{build.name}", str(context),
        ]  # fmt: skip
        if progress:
            _run_streamed(bud, env, progress)
        else:
            subprocess.run(bud, check=True, stdout=subprocess.DEVNULL, env=env)
        shutil.move(tmp_archive, archive)
        _prune(archive)
    log.info("built %s in %.0fs", build.name, time.monotonic() - start)
    return Image(build.name, archive)


def _dihera_image(settings: Settings, base: Image) -> Image:
    name = f"{DIHERA_IMAGE}:{package_version(settings)}"
    build = DockerfileBuild(name, "dihera", "Dockerfile", DOCKERFILE_INPUTS, expect="about 2 minutes")
    return dockerfile_image(settings, build, base)


def dockerfile_images(settings: Settings) -> list[Image]:
    """The images that need no Go program (the Python base, the project's image), built when their
    inputs changed: `make test` builds them in the background while the Go programs compile."""
    settings.images_dir.mkdir(parents=True, exist_ok=True)
    python = python_image(settings)
    return [python, _dihera_image(settings, python), redis_image(settings)]


def build_all(settings: Settings) -> list[Image]:
    """Every image of the real node, built when its inputs changed (else found in the cache)."""
    settings.images_dir.mkdir(parents=True, exist_ok=True)
    return [
        _binary_image(settings, "pause", PAUSE_IMAGE, ["/pause"]),
        _binary_image(settings, "argoexec", ARGOEXEC_IMAGE, ["/bin/argoexec"]),
        *dockerfile_images(settings),
    ]


def import_all(images: list[Image], socket: Path, namespace: str) -> None:
    """Load the archives into containerd's `namespace` (the CRI plugin's: k8s.io)."""
    for image in images:
        subprocess.run(
            ["ctr", f"--address={socket}", f"--namespace={namespace}", "images", "import", str(image.archive)],
            check=True, capture_output=True,
        )  # fmt: skip
