"""Defaults that more than one layer takes, each written once: the engine's batch size (``vlprobe.evaluate``'s,
``vlprobe.probe``'s and ``vlprobe.score``'s too) and the rows a run reads and scores at a time."""

BATCH_SIZE = 32  # inputs per forward pass
CHUNK_ROWS = 2000  # rows read and scored (or encoded) at a time; memory does not grow with the dataset
