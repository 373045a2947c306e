"""Dataset cards of the builders: prose in Jinja2 templates (``vlprobe/templates/*.md``), rendered
with huggingface_hub's card API (:meth:`DatasetCard.from_template`), the YAML header from
:class:`DatasetCardData`. A template starts with ``---\\n{{ card_data }}\\n---``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


def render(template: str, metadata: Mapping[str, Any], **values: Any):
    """The card (a ``huggingface_hub.DatasetCard``) of ``template`` with ``metadata`` as its YAML."""
    from huggingface_hub import DatasetCard, DatasetCardData

    return DatasetCard.from_template(DatasetCardData(**dict(metadata)), template_path=str(TEMPLATES / template),
                                     **values)


def write(folder: str | Path, template: str, metadata: Mapping[str, Any], **values: Any) -> Path:
    """Render ``template`` and write it as ``<folder>/README.md``."""
    path = Path(folder) / "README.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = str(render(template, metadata, **values)).rstrip() + "\n"
    path.write_text(text, encoding="utf-8")
    from ..dataset_folder import record_data_files

    record_data_files(folder)  # as dataset_folder.write_card does: the cache key follows the files
    return path
