"""Whether the Hugging Face Hub answers (asked quickly, the answer kept), and whether a model can be had now."""

from __future__ import annotations

import time
from pathlib import Path

HUB_CHECK_SECONDS = 3.0  # how long the page waits for the Hub to answer
HUB_CHECK_TTL = 600.0  # how long an answer is kept
_hub_answer: list[tuple[float, bool]] = []


def hub_reachable() -> bool:
    """Whether the Hub answers within HUB_CHECK_SECONDS, asked at most once every HUB_CHECK_TTL seconds."""
    from huggingface_hub import constants, get_session

    if constants.HF_HUB_OFFLINE:
        return False
    if _hub_answer and time.monotonic() - _hub_answer[0][0] < HUB_CHECK_TTL:
        return _hub_answer[0][1]
    try:
        get_session().head(f"{constants.ENDPOINT}/api/models", timeout=HUB_CHECK_SECONDS)
        answer = True
    except Exception:  # noqa: BLE001  (no answer, whatever the reason: offline)
        answer = False
    _hub_answer[:] = [(time.monotonic(), answer)]
    return answer


def local_folder(model_id: str) -> bool:
    """Whether a model id is an absolute path to a folder (the page resolves local models so; the rest are Hub ids)."""
    return Path(model_id).is_absolute() and Path(model_id).is_dir()


def model_at_hand(model_id: str, root: Path | None = None) -> bool:
    """Whether a model can be loaded now without waiting on a dead network: a local folder (absolute, or under
    ``root``), a Hub model in the local cache, or any Hub id while the Hub answers."""
    if local_folder(model_id) or (root is not None and (root / model_id / "config.json").is_file()):
        return True
    import huggingface_hub

    if isinstance(huggingface_hub.try_to_load_from_cache(model_id, "config.json"), str):
        return True
    return hub_reachable()
