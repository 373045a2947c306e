"""Defaults that more than one layer takes, each written once: the engine's batch size (``vlprobe.probe``'s and
``vlprobe.score``'s too, and what ``auto`` means on the CPU), the word that asks for the searched batch size, and the
rows a run reads and scores at a time."""

AUTO = "auto"  # batch_size=AUTO: searched per tower on an accelerator (vlprobe.scoring.auto_batch), BATCH_SIZE on the CPU
BATCH_SIZE = 32  # inputs per forward pass
CHUNK_ROWS = 2000  # rows read and scored (or encoded) at a time; memory does not grow with the dataset
