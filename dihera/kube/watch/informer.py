"""List, then watch, one kind of object in a thread of its own: client-go's Reflector, over raw JSON.

An :class:`Informer` lists the objects a list call answers with (in pages), hands them over at once
(``on_listed``: the caller replaces what it held, as client-go's ``store.Replace``), then watches from the
listing's resourceVersion and hands over every ADDED, MODIFIED or DELETED object (``on_event``). The
watch resumes from the last version it delivered (bookmarks included) when the server ends it, and
after a connection error (with a growing delay); ``410 Gone`` means that version is no longer served,
so it lists again.

Events are decoded from the stream's JSON lines with orjson and passed on as plain dicts: no model
objects, no per-event machinery. This is what the controller's busiest watch (its jobs' pods, about
1,500 events of ~21 KB in a burst of 44 jobs of 10 replicas) costs least as.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import cast

import orjson
from kubernetes.client.exceptions import ApiException
from urllib3.response import BaseHTTPResponse

from dihera.objects import metadata

__all__ = ["Gone", "Informer", "ListCall", "json_lines"]

log = logging.getLogger("dihera.kube")

#: A generated client's list method bound to its scope, e.g. ``functools.partial(core.list_namespaced_pod,
#: "ns", label_selector=...)``: called with ``limit``/``_continue`` to list, with ``watch=True`` to watch.
ListCall = Callable[..., object]
#: (connect, read) seconds for a page of a listing.
LIST_TIMEOUT = (10.0, 60.0)
#: Objects per page of a listing (as client-go's reflector pages).
PAGE = 500


class Gone(Exception):
    """The resourceVersion a watch or a listing's next page asked for is too old (410): list again."""


def json_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The complete lines of a stream of byte chunks (a watch sends one JSON object per line).

    A line longer than a chunk (a big job's Workflow is megabytes) is joined once, when its end arrives:
    each chunk is searched and kept once, not appended to a growing buffer searched from its start.
    """
    pending: list[bytes] = []  # the start of a line whose end has not arrived yet
    for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if pending:
                pending.append(chunk[start:end])
                line = b"".join(pending)
                pending.clear()
            else:
                line = chunk[start:end]
            if line:
                yield line
            start = end + 1
        if start < len(chunk):
            pending.append(chunk[start:])
    rest = b"".join(pending)
    if rest.strip():
        yield rest


def _raw(response: object) -> BaseHTTPResponse:
    """A list call's answer: with ``_preload_content=False`` the generated client returns the raw response."""
    return cast(BaseHTTPResponse, response)


def _check(response: BaseHTTPResponse, what: str) -> None:
    if response.status >= 400:
        body = response.data
        response.release_conn()
        if response.status == 410:
            raise Gone(f"{what}: 410 Gone")
        raise ApiException(
            status=response.status, reason=getattr(response, "reason", ""), body=body.decode(errors="replace")
        )


class Informer:
    """Lists, then watches, what ``list_call`` answers with, in a daemon thread (:meth:`start`).

    ``on_listed(objects, version)`` gets every listing, the first and any after ``410 Gone``;
    ``on_event(type, object)`` every watch event after it. Both run in the informer's thread, in order.
    :attr:`synced` is set once the first listing was handed over, and then ``on_synced()`` is called
    (once).
    """

    def __init__(
        self,
        list_call: ListCall,
        name: str,
        on_listed: Callable[[list[dict[str, object]], str], None],
        on_event: Callable[[str, dict[str, object]], None],
        watch_seconds: int = 300,
        backoffs: Sequence[float] = (1, 2, 5, 10),
        on_synced: Callable[[], None] | None = None,
    ) -> None:
        self._list_call = list_call
        self.name = name
        self._on_listed = on_listed
        self._on_event = on_event
        self._on_synced = on_synced
        self._watch_seconds = watch_seconds
        self._backoffs = tuple(backoffs) or (1.0,)
        self.synced = threading.Event()
        self._stop = threading.Event()
        self._response: BaseHTTPResponse | None = None
        self._thread = threading.Thread(target=self._run, name=f"informer-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait: float = 5.0) -> None:
        """Stop watching (the open watch is shut down, not waited out); waits up to ``wait`` seconds for the
        thread unless called from it."""
        self._stop.set()
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):  # already closed: nothing to unblock
                response.shutdown()  # unblocks the read in the informer's thread
        if threading.current_thread() is not self._thread and self._thread.is_alive():
            self._thread.join(wait)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def alive(self) -> bool:
        """False only when its thread ended without being stopped (nothing it watches is seen any more)."""
        return self._stop.is_set() or self._thread.ident is None or self._thread.is_alive()

    def _run(self) -> None:
        version: str | None = None
        failures = 0
        while not self._stop.is_set():
            try:
                if version is None:
                    version = self._list()
                    if not self.synced.is_set():
                        self.synced.set()
                        if self._on_synced is not None:
                            self._on_synced()
                version = self._watch(version)
                failures = 0
            except Gone as why:
                log.info("watch of %s: %s; listing again", self.name, why)
                version = None
            except Exception as err:  # a connection or server error: retried after a delay
                if self._stop.is_set():
                    break
                delay = self._backoffs[min(failures, len(self._backoffs) - 1)]
                failures += 1
                log.warning("watch of %s failed (%s); again in %.0f s", self.name, _describe(err), delay)
                self._stop.wait(delay)
        log.debug("watch of %s stopped", self.name)

    def _list(self) -> str:
        """Every object, in pages of :data:`PAGE`; hands them over; returns the listing's resourceVersion."""
        items: list[dict[str, object]] = []
        token: str | None = None
        version = ""
        while True:
            response = _raw(
                self._list_call(limit=PAGE, _continue=token, _preload_content=False, _request_timeout=LIST_TIMEOUT)
            )
            _check(response, f"listing {self.name}")
            data = response.data
            response.release_conn()
            page = orjson.loads(data)
            meta = page.get("metadata") or {}
            version = version or str(meta.get("resourceVersion") or "")
            items.extend(page.get("items") or ())
            token = meta.get("continue")
            if not token:
                break
        self._on_listed(items, version)
        return version

    def _watch(self, version: str) -> str:
        """One watch from ``version`` until the server ends it; returns the last version it delivered."""
        seconds = int(self._watch_seconds * (1 + random.random()))  # spread, as client-go's reflector does
        response = _raw(
            self._list_call(
                watch=True,
                resource_version=version,
                allow_watch_bookmarks=True,
                timeout_seconds=seconds,
                _preload_content=False,
                _request_timeout=(LIST_TIMEOUT[0], seconds + 30),
            )
        )
        self._response = response
        if self._stop.is_set():  # stopped while the request was sent: nothing shut it down
            response.close()
            response.release_conn()
            self._response = None
            return version
        try:
            _check(response, f"watching {self.name}")
            for line in json_lines(response.stream(65536, decode_content=False)):
                if self._stop.is_set():
                    break
                event = orjson.loads(line)
                kind = event.get("type")
                obj: dict[str, object] = event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        raise Gone(str(obj.get("message") or "410 Gone"))
                    raise ApiException(
                        status=obj.get("code"), reason=str(obj.get("reason")), body=line.decode(errors="replace")
                    )
                version = metadata(obj).get("resourceVersion") or version
                if kind == "BOOKMARK":
                    continue
                try:
                    self._on_event(str(kind), obj)
                except Exception:
                    log.exception("watch of %s: handling a %s event failed", self.name, kind)
        finally:
            self._response = None
            response.close()  # the stream may be cut short: its connection is not reused
            response.release_conn()
        return version


def _describe(err: BaseException) -> str:
    if isinstance(err, ApiException):
        return f"{err.status} {err.reason}"
    return f"{type(err).__name__}: {err}"
