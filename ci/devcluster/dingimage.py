"""The DI-engine image (ci/images/di-engine): built and imported on demand, not at every cluster-up.

It is big (torch with its CUDA runtime wheels: ~3 GB to download, ~5.4 GB installed), and only
real workloads need it, so `python -m ci.devcluster di-engine-image` (or the `ding_image` fixture of
tests/integration) builds it when its inputs changed (a docker-archive in `$DIHERA_CACHE/images/`,
like the other images; pip's downloads stay in buildah's cache mount across rebuilds) and imports it
into the running real node's containerd unless that already holds the same build. The import takes
2-3 minutes (two copies of ~5.4 GiB: the content store, then the unpacked snapshot) and hardly any CPU,
so the test session starts it as soon as its cluster is up (`start_import`) and waits for it only in
the first test that needs the image. `make test` builds the image itself in the background beside the
first tests (ci/bg.sh job `di-engine-image`): the session then imports it once that build ends
(`BuildThenImport`).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import tarfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .images import DockerfileBuild, Image, dockerfile_archive, dockerfile_image, python_archive, python_image
from .settings import Settings

__all__ = [
    "BUILD_JOB",
    "DING_BUILD",
    "DING_IMAGE",
    "BuildThenImport",
    "ImageImport",
    "ImageReport",
    "archive_config_digest",
    "background_build",
    "build_ding_image",
    "ensure_ding_image",
    "imported",
    "start_import",
]

log = logging.getLogger("devcluster")

DING_IMAGE = "dihera.local/di-engine:0.5.3"  # workflows/cartpole-dqn.yaml's dihera/di-engine:0.5.3, built here
DING_BUILD = DockerfileBuild(
    DING_IMAGE,
    kind="di-engine",
    dockerfile="ci/images/di-engine/Dockerfile",
    inputs=("ci/images/di-engine", "examples/cartpole/cartpole_dqn", "examples/figures"),  # no README: docs only
    expect="about 6-8 minutes, ~3 GB of wheels downloaded into a wheelhouse kept for the next build",
)


@dataclass(frozen=True)
class ImageReport:
    """What `ensure_ding_image` did, with its figures."""

    image: Image
    built_seconds: float | None  # None: the archive was in the cache
    imported_seconds: float | None  # None: containerd already held this image
    archive_bytes: int


def archive_config_digest(archive: Path) -> str:
    """The image config's digest in a docker-archive (manifest.json's `Config`: `<hex>.json`)."""
    with tarfile.open(archive) as tar:
        member = tar.extractfile("manifest.json")
        if member is None:
            raise ValueError(f"{archive}: manifest.json is not a file")
        manifest = json.load(member)
    return "sha256:" + Path(manifest[0]["Config"]).stem.removeprefix("sha256:")


def _ctr_command(socket: Path, namespace: str, *args: str) -> list[str]:
    return ["ctr", f"--address={socket}", f"--namespace={namespace}", *args]


def _ctr(socket: Path, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_ctr_command(socket, namespace, *args), capture_output=True, text=True, check=False)


class ImageImport:
    """`ctr images import` of an image's archive, running from construction; `wait()` for its end.

    ctr runs niced (it uses little CPU: the time is the disk's) while the caller goes on; a thread waits
    for it to note when it ended, so the seconds reported are the import's, not the caller's wait.
    """

    def __init__(self, image: Image, socket: Path, namespace: str) -> None:
        self.image = image
        self._started = time.monotonic()
        self._ended: float | None = None
        self._stderr = ""
        command = ["nice", "-n", "10", *_ctr_command(socket, namespace, "images", "import", str(image.archive))]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self._waiter = threading.Thread(target=self._wait_for_ctr, name="ctr-images-import", daemon=True)
        self._waiter.start()

    def _wait_for_ctr(self) -> None:
        _, self._stderr = self._process.communicate()
        self._ended = time.monotonic()

    def running(self) -> bool:
        return self._waiter.is_alive()

    def wait(self) -> float:
        """Wait for the import to end; the seconds it took. RuntimeError if ctr failed."""
        self._waiter.join()
        if self._process.returncode != 0:
            raise RuntimeError(
                f"ctr images import {self.image.archive} exited {self._process.returncode}: {self._stderr[-2000:]}"
            )
        assert self._ended is not None
        return self._ended - self._started

    def cancel(self) -> None:
        """Stop the import if it still runs (the session ends before a test needed the image)."""
        if self._process.poll() is None:
            self._process.terminate()
        self._waiter.join(30)


def imported(image: Image, socket: Path, namespace: str) -> bool:
    """containerd's `namespace` holds `image.name` with the archive's config (same build)."""
    listing = _ctr(socket, namespace, "images", "ls", f"name=={image.name}")
    rows = [line.split() for line in listing.stdout.splitlines()[1:] if line.strip()]
    if listing.returncode != 0 or not rows:
        return False
    manifest = _ctr(socket, namespace, "content", "get", rows[0][2])  # REF TYPE DIGEST ...
    if manifest.returncode != 0:
        return False
    config: str = json.loads(manifest.stdout).get("config", {}).get("digest", "")
    return config == archive_config_digest(image.archive)


def build_ding_image(settings: Settings, progress: Callable[[str], None] = log.info) -> tuple[Image, float | None]:
    """The DI-engine image's archive, built if its inputs changed; the seconds it took (None: cached)."""
    settings.images_dir.mkdir(parents=True, exist_ok=True)
    base = python_image(settings)
    if dockerfile_archive(settings, DING_BUILD, base).exists():
        return dockerfile_image(settings, DING_BUILD, base), None
    start = time.monotonic()
    image = dockerfile_image(settings, DING_BUILD, base, progress=progress)
    built = time.monotonic() - start
    progress(f"built {DING_IMAGE} in {built:.0f}s: {image.archive} ({image.archive.stat().st_size / 2**30:.2f} GiB)")
    return image, built


def start_import(settings: Settings, socket: Path, namespace: str) -> ImageImport | None:
    """Start importing the DI-engine image into containerd if its archive is built and containerd does not
    hold it yet; None otherwise (nothing to do, or a build first: `ensure_ding_image` does that)."""
    if not python_archive(settings).exists():
        return None
    base = python_image(settings)
    if not dockerfile_archive(settings, DING_BUILD, base).exists():
        return None
    image = dockerfile_image(settings, DING_BUILD, base)
    return None if imported(image, socket, namespace) else ImageImport(image, socket, namespace)


#: The ci/bg.sh job in which `make test` builds the DI-engine image beside its first tests.
BUILD_JOB = "di-engine-image"
BG_SH = Path(__file__).resolve().parents[1] / "bg.sh"


def _jobs_dir(settings: Settings, environ: Mapping[str, str]) -> Path:
    """Where ci/bg.sh keeps its jobs' files: $DIHERA_BG_DIR, else build/bg in the checkout."""
    return Path(environ.get("DIHERA_BG_DIR") or settings.repo / "build" / "bg")


def background_build(settings: Settings, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The pid file of the DI-engine image's background build (ci/bg.sh job BUILD_JOB) while it runs; None
    when none runs (never started here, or ended: a finished job's image is in the cache, a failed one is
    built again in the foreground by `ensure_ding_image`)."""
    jobs = _jobs_dir(settings, environ)
    pid_file, rc_file = jobs / f"{BUILD_JOB}.pid", jobs / f"{BUILD_JOB}.rc"
    if not pid_file.exists() or rc_file.exists():
        return None
    try:
        os.kill(int(pid_file.read_text().strip()), 0)
    except (ValueError, ProcessLookupError, PermissionError):
        return None
    return pid_file


class BuildThenImport:
    """Waits for the DI-engine image's background build (``ci/bg.sh wait``), then imports the image as
    `start_import` does; the same `running`/`wait`/`cancel` as `ImageImport`, all from a thread of its own,
    so the test session goes on meanwhile. `wait()`: the import's seconds (None: nothing to import), or
    RuntimeError with the end of the build's log when the build failed."""

    def __init__(
        self, settings: Settings, socket: Path, namespace: str, environ: Mapping[str, str] = os.environ
    ) -> None:
        self._settings, self._socket, self._namespace = settings, socket, namespace
        self._env = {**environ, "DIHERA_BG_DIR": str(_jobs_dir(settings, environ))}
        self._error = ""
        self._import: ImageImport | None = None
        self._cancelled = threading.Event()
        self._thread = threading.Thread(target=self._run, name="di-engine-image-build", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        done = subprocess.run(
            ["bash", str(BG_SH), "wait", BUILD_JOB], capture_output=True, text=True, check=False, env=self._env
        )
        if done.returncode != 0:
            self._error = f"the DI-engine image's background build failed: {(done.stdout + done.stderr)[-3000:]}"
        elif not self._cancelled.is_set():
            self._import = start_import(self._settings, self._socket, self._namespace)
            if self._import is not None:
                self._import.wait()

    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self) -> float | None:
        self._thread.join()
        if self._error:
            raise RuntimeError(self._error)
        return None if self._import is None else self._import.wait()

    def cancel(self) -> None:
        self._cancelled.set()
        if self._import is not None:
            self._import.cancel()


def ensure_ding_image(
    settings: Settings, socket: Path, namespace: str, progress: Callable[[str], None] = log.info
) -> ImageReport:
    """Build the DI-engine image if its inputs changed, import it into containerd unless it is there."""
    image, built = build_ding_image(settings, progress)
    size = image.archive.stat().st_size
    if imported(image, socket, namespace):
        return ImageReport(image, built, None, size)
    progress(f"importing {DING_IMAGE} into the real node's containerd ({size / 2**30:.2f} GiB)")
    took = ImageImport(image, socket, namespace).wait()
    progress(f"imported {DING_IMAGE} in {took:.0f}s")
    return ImageReport(image, built, took, size)
