"""Dataset cards of the builders: prose in Jinja2 templates (``vlprobe/templates/*.md``, starting with
``---\\n{{ card_data }}\\n---``), rendered with huggingface_hub's card API."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


def write(folder: str | Path, template: str, metadata: Mapping[str, Any], **values: Any) -> Path:
    """Render ``template`` with ``metadata`` as its YAML header and write it as ``<folder>/README.md``."""
    from huggingface_hub import DatasetCard, DatasetCardData

    path = Path(folder) / "README.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    card = DatasetCard.from_template(DatasetCardData(**dict(metadata)), template_path=str(TEMPLATES / template), **values)
    text = str(card).rstrip() + "\n"
    path.write_text(text, encoding="utf-8")
    from ..dataset.folder import record_data_files

    record_data_files(folder)  # as dataset_folder.write_card does: the cache key follows the files
    return path


BUILD_REPORT = "data/BUILD.md"  # vlprobe.publish uploads it with the data


def write_build_report(folder: str | Path, title: str, lines: list[str]) -> Path:
    """Write ``<folder>/data/BUILD.md``: what varies from build to build (the card does not, nor any tracked file)."""
    path = Path(folder) / BUILD_REPORT
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(f"# {title}\n\n" + "\n".join(lines).rstrip() + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def body(name: str) -> str:
    """The prose of a card written with :func:`vlprobe.dataset.folder.write_card`: ``vlprobe/templates/<name>``."""
    return (TEMPLATES / name).read_text(encoding="utf-8")
