"""Regenerate (or, with ``--check``, verify) every file derived from ``schemas/`` and the core/v1 models.

python -m dihera.schema.generate          # write
python -m dihera.schema.generate --check  # exit 1 and name the files that drifted
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dihera.manifests import dump_yaml
from dihera.schema.crd import crd_manifest
from dihera.schema.podtemplate import POD_TEMPLATE_FILE, build_pod_template_schema

__all__ = ["generated_files", "main"]

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "schemas" / "dijob.v2alpha1.json"
PACKAGE_COPY = ROOT / "dihera" / "schema" / "dijob.v2alpha1.json"
POD_TEMPLATE = ROOT / "dihera" / "schema" / POD_TEMPLATE_FILE
CHART_CRD = ROOT / "charts" / "dihera" / "templates" / "crd-dijob.yaml"

_HEADER = "# Generated from schemas/dijob.v2alpha1.json by `make generate`: do not edit.\n"


def _chart_crd(crd: dict[str, Any]) -> str:
    """The CRD as a chart template: installed when crds.enabled, kept on uninstall when crds.keep."""
    body = dict(crd)
    meta = {"name": crd["metadata"]["name"], "annotations": "@ANNOTATIONS@", "labels": "@LABELS@"}
    body["metadata"] = meta
    text = dump_yaml(body)
    text = text.replace(
        "  annotations: '@ANNOTATIONS@'\n",
        "  annotations:\n"
        "    {{- if .Values.crds.keep }}\n"
        "    helm.sh/resource-policy: keep\n"
        "    {{- end }}\n"
        "    {{- with .Values.crds.annotations }}\n"
        "    {{- toYaml . | nindent 4 }}\n"
        "    {{- end }}\n",
    )
    text = text.replace(
        "  labels: '@LABELS@'\n",
        '  labels:\n    {{- include "dihera.labels" . | nindent 4 }}\n',
    )
    return _HEADER + "{{- if .Values.crds.enabled }}\n" + text + "{{- end }}\n"


def generated_files() -> dict[Path, str]:
    """Every generated file and the text it must have."""
    source_text = SOURCE.read_text(encoding="utf-8")
    schema = json.loads(source_text)
    return {
        PACKAGE_COPY: source_text,
        POD_TEMPLATE: json.dumps(build_pod_template_schema(), indent=1) + "\n",
        CHART_CRD: _chart_crd(crd_manifest(schema)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a generated file drifted")
    args = parser.parse_args(argv)
    drifted = []
    for path, text in generated_files().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            drifted.append(path.relative_to(ROOT))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if drifted:
        print("generated files drifted from schemas/ (run `make generate`):", file=sys.stderr)
        for p in drifted:
            print(f"  {p}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
