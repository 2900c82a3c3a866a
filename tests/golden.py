"""Golden files: every example in workflows/ has its rendered objects in workflows/rendered/, and every
sweep in workflows/python/*_sweep.py its Workflow.

python -m tests.golden --write   # regenerate after an intended change
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from dihera.manifests import dump_yaml_stream
from dihera.render import RenderSettings, render
from dihera.validation import load_job

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "workflows"
RENDERED = EXAMPLES / "rendered"
SETTINGS = RenderSettings()


def examples() -> list[Path]:
    """The example DIJobs (workflows/*.yaml)."""
    return sorted(EXAMPLES.glob("*.yaml"))


def sweep_examples() -> list[Path]:
    """The example sweeps and pipelines (workflows/python/*_sweep.py, *_pipeline.py)."""
    return sorted([*EXAMPLES.glob("python/*_sweep.py"), *EXAMPLES.glob("python/*_pipeline.py")])


def golden_path(example: Path) -> Path:
    return RENDERED / (example.name if example.suffix == ".yaml" else f"{example.stem}.yaml")


def rendered_text(example: Path) -> str:
    where = example.relative_to(EXAMPLES).as_posix()
    header = f"# Rendered from workflows/{where} by `make generate`: do not edit.\n"
    if example.suffix == ".py":
        from dihera.cli.experiments import experiment_manifest, load_experiment

        return header + dump_yaml_stream([experiment_manifest(load_experiment(str(example)))])
    job = load_job(yaml.safe_load(example.read_text(encoding="utf-8")), source=example.name)
    return header + dump_yaml_stream(render(job, SETTINGS).objects())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    stale = []
    for example in [*examples(), *sweep_examples()]:
        text, path = rendered_text(example), golden_path(example)
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        if args.write:
            path.write_text(text, encoding="utf-8")
        else:
            stale.append(path)
    for path in stale:
        print(f"stale golden file: {path.relative_to(ROOT)}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
