"""``dihera convert``: older DIJob shapes -> today's v2alpha1 DIJob (pure; docs/migration.md).

Accepted, per YAML document:

- DI-orchestrator < 1.0 ``v1alpha1`` DIJobs (and NerveXJobs): coordinator / collector / learner
  pod templates, with an ``AggregatorConfig`` from the same stream or given apart;
- DI-orchestrator 1.0 DIJobs (``v2alpha1`` with ``spec.template``, and ``v1alpha2``);
- today's DIJobs (``spec.tasks``): checked and passed through;
- any other object (ConfigMap, Service...): passed through unchanged.

A DIJob or AggregatorConfig must name one of the :data:`KNOWN_API_VERSIONS` (or none: the shape decides),
and a document of their API groups one of their kinds: anything else is an error naming the value and
what is known, never a job rewritten to today's version on a guess.

Every converted job is validated with dihera's own rules; a problem in any document fails the whole
conversion (nothing half-converted is printed). So does a job whose program cannot train under dihera,
DI-engine's old ``ding -m dist`` pipeline (``programs``), unless ``allow_v1alpha1_programs`` (then a
warning). The parts:

- ``v1alpha1``: DI-orchestrator < 1.0's shape; ``v1shape``: DI-orchestrator 1.0's
- ``scan``: what older jobs keep inside their containers' commands; ``common``: what every conversion shares
- ``programs``: the programs that cannot train under dihera as they are
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dihera.convert.common import Notes
from dihera.convert.programs import ALLOW_FLAG, old_pipeline
from dihera.convert.v1alpha1 import Counts, convert_v1alpha1, is_v1alpha1
from dihera.convert.v1shape import convert_v1shape, is_v1shape
from dihera.errors import Problem, format_value
from dihera.schema import API_VERSION
from dihera.validation import validate

__all__ = ["AGGREGATOR_KIND", "KNOWN_API_VERSIONS", "Conversion", "Counts", "Note", "convert_documents"]

AGGREGATOR_KIND = "AggregatorConfig"
_JOB_KINDS = {"dijob", "nervexjob"}  # compared lower-cased: NerveXJob and NervexJob both exist
#: The versions of DIJobs (and AggregatorConfigs) dihera converts: DI-orchestrator's (< 1.0, 1.0 and
#: today's), and NerveX's before it.
KNOWN_API_VERSIONS = (
    "diengine.opendilab.org/v1alpha1",
    "diengine.opendilab.org/v1alpha2",
    API_VERSION,
    "nervex.sensetime.com/v1alpha1",
)
_KNOWN_GROUPS = {v.split("/")[0] for v in KNOWN_API_VERSIONS}
_KNOWN_KINDS = ("DIJob", "NerveXJob", AGGREGATOR_KIND)


@dataclass(frozen=True)
class Note:
    """A line for standard error: which document, and what was said about it."""

    document: str
    level: str  # ``warning``, ``info`` or ``error``
    message: str

    def __str__(self) -> str:
        return f"{self.document}: {self.level}: {self.message}"


@dataclass
class Conversion:
    objects: list[dict[str, object]] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(n.level == "error" for n in self.notes)


def _kind(doc: object) -> str:
    return str(doc.get("kind") or "") if isinstance(doc, Mapping) else ""


def _name(doc: object) -> str:
    meta = doc.get("metadata") if isinstance(doc, Mapping) else None
    return str(meta.get("name")) if isinstance(meta, Mapping) and meta.get("name") else "?"


def _unpack_lists(documents: Sequence[tuple[str, object]]) -> list[tuple[str, object]]:
    """A ``kind: List`` (as ``kubectl get -o yaml`` writes) stands for its items."""
    out: list[tuple[str, object]] = []
    for label, doc in documents:
        items = doc.get("items") if _kind(doc) == "List" and isinstance(doc, Mapping) else None
        if isinstance(items, list):
            out += [(f"{label}.items[{i}]", item) for i, item in enumerate(items)]
        else:
            out.append((label, doc))
    return out


def _looks_like_a_job(doc: object) -> bool:
    """A document without ``kind`` whose spec has a DIJob shape is taken as a DIJob."""
    return isinstance(doc, Mapping) and (is_v1alpha1(doc) or is_v1shape(doc) or "tasks" in (doc.get("spec") or {}))


def _convert_job(
    doc: Mapping[str, object], counts: Counts, aggregator: Mapping[str, object] | None
) -> tuple[Any, Notes]:
    notes = Notes()
    if is_v1alpha1(doc):
        if _kind(doc).lower() == "nervexjob":
            notes.say("kind", "NerveXJob is the DIJob of DI-orchestrator's first releases")
        return convert_v1alpha1(doc, counts, aggregator, notes), notes
    if is_v1shape(doc):
        return convert_v1shape(doc, notes), notes
    spec = doc.get("spec")
    if isinstance(spec, Mapping) and "tasks" in spec:
        if doc.get("apiVersion") != API_VERSION:
            notes.say("apiVersion", f"{format_value(doc.get('apiVersion'))} is written {API_VERSION}")
        notes.say("spec.tasks", "already today's shape; passed through")
        return {**doc, "apiVersion": API_VERSION, "kind": "DIJob"}, notes
    keys = ", ".join(sorted(spec)) if isinstance(spec, Mapping) else format_value(spec)
    notes.problem(
        "spec",
        f"not a DIJob shape dihera knows (spec keys: {keys}); expected spec.coordinator/collector/learner "
        "(v1alpha1), spec.template (DI-orchestrator 1.0) or spec.tasks",
    )
    return None, notes


def _first_aggregator(
    documents: Sequence[tuple[str, object]], aggregators: Sequence[tuple[str, object]], notes: list[Note]
) -> tuple[str, object] | None:
    """The first AggregatorConfig of the stream or given apart, as (label, document); a note for each other."""
    configs = [(label, d) for label, d in [*documents, *aggregators] if _kind(d) == AGGREGATOR_KIND]
    for label, _ in configs[1:]:
        notes.append(Note(label, "warning", "a second AggregatorConfig; only the first is used"))
    return configs[0] if configs else None


def _is_job(kind: str, doc: object) -> bool:
    return kind.lower() in _JOB_KINDS or (kind == "" and _looks_like_a_job(doc))


def _pass_through(result: Conversion, label: str, kind: str, doc: object) -> None:
    """Any other object goes out unchanged; what is not an object is an error."""
    if isinstance(doc, Mapping):
        result.objects.append(dict(doc))
        result.notes.append(Note(label, "info", f"{kind or 'an object without kind'} passed through unchanged"))
    else:
        result.notes.append(Note(label, "error", f"not an object: {format_value(doc)}"))


def _job_problems(job: object, notes: Notes) -> list[Problem]:
    """The conversion's problems, else those of validating the converted job."""
    problems: list[Problem] = list(notes.problems)
    if job is not None and not problems:
        problems = [Problem(p.path, f"{p.message} (in the converted job)") for p in validate(job)]
    return problems


def _program_note(doc: Mapping[str, object], notes: Notes, allow: bool) -> None:
    """The old ``ding -m dist`` pipeline: a problem when it needs the v1alpha1 API (unless ``allow``), else a
    warning."""
    found = old_pipeline(doc, is_v1alpha1(doc))
    if found is None:
        return
    field, message, fatal = found
    if fatal and not allow:
        notes.problem(field, f"{message}; or convert it as it is with {ALLOW_FLAG}")
    else:
        notes.warn(field, message)


def _add_job(
    result: Conversion,
    label: str,
    doc: Mapping[str, object],
    counts: Counts,
    aggregator: Mapping[str, object] | None,
    allow_v1alpha1_programs: bool = False,
) -> None:
    """Convert one job: its notes, and the converted job unless it has a problem."""
    label = f"{label} ({_name(doc)})"
    job, notes = _convert_job(doc, counts, aggregator if is_v1alpha1(doc) else None)
    _program_note(doc, notes, allow_v1alpha1_programs)
    problems = _job_problems(job, notes)
    result.notes += [Note(label, "info", m) for m in notes.info]
    result.notes += [Note(label, "warning", m) for m in notes.warnings]
    result.notes += [Note(label, "error", str(p)) for p in problems]
    if job is not None and not problems:
        result.objects.append(job)


def _has_v1alpha1(documents: Sequence[tuple[str, object]]) -> bool:
    return any(is_v1alpha1(d) for _, d in documents if isinstance(d, Mapping))


def _identity_problem(kind: str, doc: object) -> str | None:
    """Why a DIJob or AggregatorConfig names a version dihera does not know, or a document of their groups a
    kind it does not know; None when neither."""
    if not isinstance(doc, Mapping) or doc.get("apiVersion") is None:
        return None  # no apiVersion: the shape decides (a job without kind too)
    version = doc["apiVersion"]
    known = _is_job(kind, doc) or kind == AGGREGATOR_KIND
    if known and version not in KNOWN_API_VERSIONS:
        return (
            f"apiVersion: {format_value(version)} is not a version of {kind or 'DIJob'} dihera converts; "
            f"known: {', '.join(KNOWN_API_VERSIONS)}"
        )
    if not known and str(version).split("/")[0] in _KNOWN_GROUPS:
        return f"kind: {format_value(doc.get('kind'))} is not a kind of {version} dihera converts; known: " + ", ".join(
            _KNOWN_KINDS
        )
    return None


def convert_documents(
    documents: Sequence[tuple[str, object]],
    counts: Counts | None = None,
    aggregators: Sequence[tuple[str, object]] = (),
    allow_v1alpha1_programs: bool = False,
) -> Conversion:
    """Convert ``documents`` ((label, document) pairs); ``aggregators``: AggregatorConfigs given apart;
    ``allow_v1alpha1_programs``: convert a job running DI-engine's old ``ding -m dist`` pipeline, which
    needs DI-orchestrator's v1alpha1 API, with a warning instead of refusing it."""
    counts = counts or Counts()
    result = Conversion()
    documents = _unpack_lists(documents)
    for label, doc in aggregators:  # those given apart; the stream's are checked below
        problem = _identity_problem(_kind(doc), doc)
        if problem is not None:
            result.notes.append(Note(label, "error", problem))
    first = _first_aggregator(documents, aggregators, result.notes)
    aggregator = first[1] if first and isinstance(first[1], Mapping) else None  # its kind: a Mapping
    for label, doc in documents:
        kind = _kind(doc)
        problem = _identity_problem(kind, doc)
        if problem is not None:
            result.notes.append(Note(f"{label} ({_name(doc)})", "error", problem))
        elif kind == AGGREGATOR_KIND:
            continue
        elif _is_job(kind, doc) and isinstance(doc, Mapping):  # a job is a Mapping (_kind, _looks_like_a_job)
            _add_job(result, label, doc, counts, aggregator, allow_v1alpha1_programs)
        else:
            _pass_through(result, label, kind, doc)
    if first is not None and not _has_v1alpha1(documents):
        result.notes.append(Note(first[0], "warning", "AggregatorConfig unused: no v1alpha1 DIJob to add it to"))
    return result
