"""What an upload is: the errors of a publishing step, the :class:`UploadPlan` it builds, and the repo-id check."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class PublishError(ValueError):
    """A user-facing publishing error."""


class ValidationError(PublishError):
    """The folder is not ready; ``problems`` lists every reason."""

    def __init__(self, what: str, problems: list[str]):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{what} is not ready to publish ({len(self.problems)} problem(s)):\n{lines}")


@dataclass
class UploadPlan:
    """What :func:`publish` will do: one repo, one folder, these files."""

    repo_id: str
    repo_type: str  # "dataset" or "space"
    folder: Path
    files: list[str]  # paths relative to folder, posix
    allow_patterns: list[str] | None = None
    ignore_patterns: list[str] = field(default_factory=list)
    space_sdk: str | None = None
    notes: list[str] = field(default_factory=list)  # what the checks found (printed by the CLI)
    keep_alive: Any = None  # a staging TemporaryDirectory that must outlive the upload

    def describe(self, private: bool = False) -> str:
        sizes = [(f, (self.folder / f).stat().st_size) for f in self.files]
        total = sum(s for _, s in sizes)
        visibility = "private" if private else "public"
        width = max((len(f) for f, _ in sizes), default=0)
        lines = [
            f"{self.repo_type} repo {self.repo_id} ({visibility}"
            + (f", sdk {self.space_sdk}" if self.space_sdk else "")
            + f"): {len(sizes)} file(s), {_human(total)} from {self.folder}"
        ]
        lines += [f"  {f:<{width}}  {_human(s):>9}" for f, s in sizes]
        return "\n".join(lines)


def check_repo_id(repo_id: str) -> str:
    """``repo_id`` if it has the form ``namespace/name`` the Hub accepts, else a PublishError."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not isinstance(repo_id, str) or repo_id.count("/") != 1:
        raise PublishError(f"--repo {repo_id!r}: give it as <org or user>/<name>, for instance my-lab/valse")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise PublishError(f"--repo {repo_id!r}: not a valid Hub repo id: {err}") from None
    return repo_id


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"
