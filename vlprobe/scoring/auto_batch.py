"""``--batch-size auto``: the batch size at which a tower's throughput stops rising on this device (batch 32 used under
a fifth of an H100 on a ViT-B/32 image tower: docs/performance.md), remembered per model, dtype, device and tower in
``<cache home>/batch-sizes.json``. On the CPU it is the default (32), already enough to keep the cores busy.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..defaults import BATCH_SIZE
from ..scorers.base import is_oom

if TYPE_CHECKING:
    from ..scorers.base import Scorer

T = TypeVar("T")

GAIN = 1.10  # a larger batch must be at least 10% faster per input to be taken
LARGEST = 1024  # the search stops here: past it the gain is noise and the memory is not
MEMO_FILE = "batch-sizes.json"


def choose_batch_size(seconds_for: Callable[[int], float], *, start: int = BATCH_SIZE, largest: int = LARGEST,
                      gain: float = GAIN, on_oom: Callable[[], None] | None = None) -> tuple[int, list[dict[str, Any]]]:
    """(the batch size, the trials) by doubling from ``start`` up to ``largest``, timing a batch of each size with
    ``seconds_for(n)``, until inputs per second rise by less than ``gain`` or the device runs out of memory
    (``on_oom`` is called then); if even ``start`` does not fit, it is halved until one does."""
    trials: list[dict[str, Any]] = []
    best, best_rate = None, 0.0
    n = start
    while n <= largest:
        try:
            rate = n / max(seconds_for(n), 1e-9)
        except Exception as err:
            if not is_oom(err):
                raise
            if on_oom is not None:
                on_oom()
            trials.append({"batch_size": n, "out_of_memory": True})
            if best is not None:
                break
            if n == 1:
                raise
            n = max(1, n // 2)
            largest = n
            continue
        trials.append({"batch_size": n, "inputs_per_s": round(rate, 1)})
        if best is not None and rate < best_rate * gain:
            break
        if rate > best_rate:
            best, best_rate = n, rate
        n *= 2
    return (best if best is not None else start), trials


def timed_call(fn: Callable[[T], object], inputs: T, device: str) -> float:
    """Seconds for ``fn(inputs)`` at a shape already seen once (one untimed call first), the device synchronised."""
    fn(inputs)
    _sync(device)
    t = time.perf_counter()
    fn(inputs)
    _sync(device)
    return time.perf_counter() - t


def _sync(device: str) -> None:
    if str(device).startswith("cuda"):
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize(device)


def device_name(device: str) -> str:
    """The device as the memo keys it: the card's name on CUDA (two cards of one kind share a choice)."""
    if str(device).startswith("cuda"):
        try:
            import torch

            return torch.cuda.get_device_name(device)
        except Exception:
            pass
    return str(device)


def memo_key(scorer: Scorer, tower: str) -> str:
    """The memo's key for ``tower`` of ``scorer``."""
    from ..storage.keys import key_digest

    return f"{key_digest(scorer.cache_key())}|{scorer.dtype}|{device_name(scorer.device)}|{tower}"


def _memo_path() -> str | None:
    """``<cache home>/batch-sizes.json``, or None where the cache home is refused, as every cache under it is."""
    from ..storage.locations import cache_home, refused_home

    home = cache_home()
    return None if os.path.isdir(home) and refused_home(home) else os.path.join(home, MEMO_FILE)


def _read_memo(path: str | None) -> dict[str, Any]:
    """The memo at ``path``, where this user alone could have written it; {} otherwise (with a warning)."""
    from ..errors import warn
    from ..storage.locations import distrust

    if path is None or not os.path.lexists(path):
        return {}
    why = distrust(path, os.path.dirname(path))
    if why:
        warn(f"not reading {path}: {why}, who could have changed the batch sizes it remembers; searching again")
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            memo = json.load(f)
    except (OSError, ValueError):
        return {}
    return memo if isinstance(memo, dict) else {}


def remembered(key: str) -> int | None:
    """The batch size chosen before for ``key`` (:func:`memo_key`), or None."""
    value = _read_memo(_memo_path()).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def remember(key: str, batch_size: int) -> None:
    """Add ``key``'s choice to the memo (atomically replaced; skipped where it cannot be written)."""
    path = _memo_path()
    if path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)  # a new cache home: private
        memo = _read_memo(path)
        memo[key] = int(batch_size)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".batch-sizes-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(memo, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass
