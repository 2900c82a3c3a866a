"""Generate (or check) charts/dihera/README.md from README.md.gotmpl and the `# --` comments of values.yaml.

    python ci/chart_docs.py          # write the README
    python ci/chart_docs.py --check  # exit 1 if the README is out of date or a value is undocumented

The generator is helm-docs (a pinned Go binary, looked up in $DIHERA_CACHE/bin, then on PATH).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["CHART", "find_helm_docs", "main", "render", "undocumented"]

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "dihera"
README = CHART / "README.md"
HELM_DOCS_VERSION = "v1.14.2"
_ROW = re.compile(r"^\| (?P<key>[^ |]+) \| (?P<type>[^|]*) \| (?P<default>.*) \| (?P<desc>[^|]*) \|$")


def find_helm_docs() -> str:
    """Path of helm-docs; raises FileNotFoundError saying how to get it."""
    cache = Path(os.environ.get("DIHERA_CACHE", Path.home() / ".cache" / "dihera")) / "bin" / "helm-docs"
    if cache.is_file():
        return str(cache)
    found = shutil.which("helm-docs")
    if found:
        return found
    raise FileNotFoundError(
        f"helm-docs not found in {cache.parent} or on PATH; build it with "
        f"`go install github.com/norwoodj/helm-docs/cmd/helm-docs@{HELM_DOCS_VERSION}`"
    )


def render(chart: Path = CHART) -> str:
    """The README text helm-docs makes for `chart` (nothing written)."""
    cmd = [
        find_helm_docs(),
        "--chart-search-root",
        str(chart.parent),
        "--chart-to-generate",
        str(chart),
        "--log-level",
        "error",
        "--dry-run",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"helm-docs failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def undocumented(readme: str) -> list[str]:
    """Keys of the Values table that have no description (a value without a `# --` comment)."""
    rows = (_ROW.match(line) for line in readme.splitlines())
    return [m["key"] for m in rows if m and m["key"] != "Key" and not m["desc"].strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the README is out of date")
    args = parser.parse_args(argv)
    try:
        text = render()
    except (FileNotFoundError, RuntimeError) as err:
        print(err, file=sys.stderr)
        return 2
    missing = undocumented(text)
    if missing:
        print(f"values without a `# --` comment in {CHART / 'values.yaml'}: {', '.join(missing)}", file=sys.stderr)
        return 1
    current = README.read_text(encoding="utf-8") if README.exists() else None
    if current == text:
        return 0
    if args.check:
        print(f"{README.relative_to(ROOT)} is out of date: run `make chart-docs`", file=sys.stderr)
        return 1
    README.write_text(text, encoding="utf-8")
    print(f"wrote {README.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
