"""The digest of a local model folder (the score cache's key for it) follows the weights even
when they are rewritten in place, at the same size, with the old mtime put back."""

from __future__ import annotations

import hashlib
import os
import time

from vlprobe.storage import keys


def test_same_size_rewrite_with_old_mtime_is_seen(tmp_path, monkeypatch):
    monkeypatch.setattr(keys, "RACY_S", -1.0)  # memoise even a file written a moment ago
    model, memo = tmp_path / "model", tmp_path / "memo"
    model.mkdir()
    weights = model / "model.safetensors"
    weights.write_bytes(b"A" * 4096)
    old = (1_600_000_000_000_000_000, 1_600_000_000_000_000_000)
    os.utime(weights, ns=old)
    inode = weights.stat().st_ino
    first = keys.folder_digest(model, memo)
    assert first == keys.folder_digest(model, memo)  # memo hit: same answer
    time.sleep(0.05)  # past the kernel's timestamp tick
    with open(weights, "r+b") as fh:  # in place: same inode, same size
        fh.write(b"B" * 4096)
    os.utime(weights, ns=old)  # the old mtime put back
    st = weights.stat()
    assert (st.st_ino, st.st_size, st.st_mtime_ns) == (inode, 4096, old[1])
    second = keys.folder_digest(model, memo)
    expected = hashlib.sha256(f"model.safetensors\0{4096}\0{hashlib.sha256(b'B' * 4096).hexdigest()}\n"
                              .encode()).hexdigest()
    assert second != first and second == expected
