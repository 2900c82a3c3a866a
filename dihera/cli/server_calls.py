"""Calls from the CLI to a di-server that survive the server going away mid-call.

A write carries an ``Idempotency-Key`` made once per command (or given with ``--idempotency-key``), and
is sent again, with the same key, when no answer came back (the connection was refused, reset or timed
out: a di-server pod deleted or restarted) or the answer says to come back later (502, 503, 504, 429).
The di-server keeps each key's first answer on the DIJob itself (dihera.server.idempotency), so a retry
that reaches another replica, or the replacement of the one that died after scaling, gets that answer:
the job is scaled once. Any other answer, success or refusal, is final.
"""

from __future__ import annotations

import ssl
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx

from dihera.constants import HEADER_IDEMPOTENCY_KEY

__all__ = ["RETRY_STATUSES", "Retry", "new_key", "send", "tls_context", "untrusted"]

#: Answers that mean "not done, come back": a gateway's (the Service had no ready endpoint), overload.
RETRY_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class Retry:
    """How long to keep trying (``seconds`` from the first attempt) and how long to wait between attempts
    (``first_wait``, doubled after each failure up to ``max_wait``; a ``Retry-After`` in seconds wins)."""

    seconds: float = 60.0
    first_wait: float = 0.5
    max_wait: float = 5.0
    #: One attempt's, to connect and for each read of the answer: above the 15 s a scale-up of a queued job
    #: may wait for Kueue's admission (dihera.queueing.KueueSettings.scale_wait), so such an answer still
    #: comes; a connection the di-server's pod took away with it (a port-forward keeps it open) ends here.
    timeout: float = 20.0


def new_key() -> str:
    """A fresh key: random, so two commands never share one by accident."""
    return f"dihera-cli-{uuid.uuid4().hex}"


def tls_context(ca_file: str | None) -> ssl.SSLContext:
    """What an HTTPS answer is checked against: the certificates in ``ca_file`` (the di-server's CA, e.g. the
    chart's ConfigMap ``<release>-server-ca``), else the system's. Raises ValueError naming the file."""
    try:
        return ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
    except (OSError, ssl.SSLError) as err:
        raise ValueError(f"--ca-file: {ca_file!r} is not a readable PEM file of certificates ({err})") from err


def untrusted(err: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate check that failed under ``err``, if one did: never worth sending again."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _wait_for(resp: httpx.Response | None, wait: float, retry: Retry) -> float:
    after = resp.headers.get("retry-after", "") if resp is not None else ""
    return min(float(after), retry.max_wait) if after.isdigit() else wait


def send(
    method: str,
    url: str,
    *,
    key: str,
    headers: Mapping[str, str],
    json: object = None,
    params: Mapping[str, str] | None = None,
    retry: Retry = Retry(),
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    transport: httpx.BaseTransport | None = None,
    verify: ssl.SSLContext | bool = True,
) -> httpx.Response:
    """Send the request until an answer that is final comes back, then return it; raise the last transport
    error (httpx.TransportError) when ``retry.seconds`` pass without one, and at once when the server's
    certificate is not trusted (:func:`untrusted`). ``say`` gets a line per retry."""
    headers = {**headers, HEADER_IDEMPOTENCY_KEY: key}
    deadline, wait, attempt = time.monotonic() + retry.seconds, retry.first_wait, 1
    with httpx.Client(timeout=retry.timeout, transport=transport, verify=verify) as client:
        while True:
            resp: httpx.Response | None = None
            try:
                resp = client.request(method, url, headers=headers, json=json, params=params)
                if resp.status_code not in RETRY_STATUSES:
                    return resp
                why = f"{resp.status_code} {resp.reason_phrase}"
            except httpx.TransportError as err:
                why = f"{type(err).__name__}: {err or 'no answer'}"
                if untrusted(err) or time.monotonic() + wait > deadline:
                    raise
            if time.monotonic() + wait > deadline:
                assert resp is not None
                return resp
            pause = _wait_for(resp, wait, retry)
            say(f"attempt {attempt} got no final answer ({why}); sending it again in {pause:.1f}s with {key}")
            time.sleep(pause)
            wait, attempt = min(wait * 2, retry.max_wait), attempt + 1
