"""Defaults that more than one layer takes, each written once."""

AUTO = "auto"  # batch_size=AUTO: searched per tower on an accelerator (vlprobe.scoring.auto_batch), BATCH_SIZE on the CPU
BATCH_SIZE = 32  # inputs per forward pass
CHUNK_ROWS = 2000  # rows read and scored (or encoded) at a time; memory does not grow with the dataset
