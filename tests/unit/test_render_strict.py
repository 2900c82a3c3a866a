"""Hera objects are built so that a misspelled field fails instead of vanishing.

Hera's models ignore unknown keys (``model_validate`` of a dict, or an unknown keyword, drops them).
dihera builds its own objects with keyword arguments, which mypy --strict checks; the user's pod
template parts go through ``strict``, which fails on any key the model would drop.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hera.workflows import models as m
from mypy import api as mypy

from dihera.render.strict import UnknownFieldError, strict, strict_list

REPO = Path(__file__).resolve().parents[2]


def test_hera_itself_drops_a_misspelled_key() -> None:  # the reason for strict()
    assert "confgMap" not in m.Volume.model_validate({"name": "v", "confgMap": {"name": "c"}}).model_dump()


def test_strict_names_every_misspelled_key_with_its_path() -> None:
    with pytest.raises(UnknownFieldError) as err:
        strict_list(
            m.Volume, [{"name": "ok", "emptyDir": {}}, {"name": "v", "confgMap": {"name": "c", "itmes": []}}], "volumes"
        )
    assert err.value.fields == ("volumes[1].confgMap",)
    with pytest.raises(UnknownFieldError, match=r"tolerations\.efect"):
        strict(m.Toleration, {"key": "gpu", "efect": "NoSchedule"}, "tolerations")


def test_strict_keeps_a_valid_object_whole() -> None:
    data = {"name": "v", "configMap": {"name": "c", "items": [{"key": "k", "path": "p"}]}}
    assert strict(m.Volume, data, "v").model_dump(by_alias=True, exclude_none=True) == data


def test_a_misspelled_keyword_fails_the_type_check(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text('from hera.workflows import models as m\n\nm.Template(name="x", podSpecPatch="{}")\n')
    out, _, code = mypy.run(["--strict", "--cache-dir", str(REPO / ".mypy_cache"), str(snippet)])
    assert code == 1 and 'Unexpected keyword argument "podSpecPatch" for "Template"' in out, out
