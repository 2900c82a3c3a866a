"""The controller's and the di-server's log lines: logfmt, a job's records carry ``job=``, times to the millisecond."""

from __future__ import annotations

import logging
import re

from dihera.logs import LogfmtFormatter


def line(msg: str, *args: object, **extra: object) -> str:
    record = logging.LogRecord("dihera.controller", logging.INFO, __file__, 1, msg, args, None)
    record.__dict__.update(extra)
    return LogfmtFormatter().format(record)


def test_a_record_about_a_job_names_it_and_quotes_what_needs_quoting() -> None:
    out = line('scaled %s: "added" %d', "ns/big", 3, job="ns/big")
    fields = out.split(" ", 3)
    assert fields[1:3] == ["level=INFO", "logger=dihera.controller"]
    assert fields[3] == 'job=ns/big msg="scaled ns/big: \\"added\\" 3"'


def test_the_time_has_milliseconds() -> None:
    # a scale request's steps and a pass's writes are apart by less than a second
    stamp = line("x").split(" ", 1)[0]
    assert re.fullmatch(r"time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}", stamp), stamp
