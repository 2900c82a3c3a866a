"""Structured (logfmt) logs; records about a job carry ``job=<namespace>/<name>``."""

from __future__ import annotations

import logging
import sys

__all__ = ["LogfmtFormatter", "configure_logging"]


def _quote(value: str) -> str:
    if value and not any(c in value for c in ' "=\n\t'):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class LogfmtFormatter(logging.Formatter):
    """``time=... level=INFO logger=dihera.controller job=ns/name msg="..."``."""

    def format(self, record: logging.LogRecord) -> str:
        fields = [
            # milliseconds: a scale request's steps and a pass's writes are apart by less than a second
            ("time", f"{self.formatTime(record, '%Y-%m-%dT%H:%M:%S')}.{int(record.msecs):03d}"),
            ("level", record.levelname),
            ("logger", record.name),
        ]
        job = getattr(record, "job", None)
        if job:
            fields.append(("job", str(job)))
        fields.append(("msg", record.getMessage()))
        line = " ".join(f"{k}={_quote(v)}" for k, v in fields)
        if record.exc_info:
            line += " error=" + _quote(self.formatException(record.exc_info))
        return line


def configure_logging(level: int = logging.INFO, stream: object = None) -> None:
    """Called once at the entry point: one stderr handler, logfmt; the Kubernetes client's leader election
    (a line per renewal) above WARNING only: :mod:`dihera.kube.lease` logs the changes of leader."""
    handler = logging.StreamHandler(stream or sys.stderr)  # type: ignore[arg-type]
    handler.setFormatter(LogfmtFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("leaderelection").setLevel(logging.WARNING)
