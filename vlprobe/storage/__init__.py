"""vlprobe.storage."""
