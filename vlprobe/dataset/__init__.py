"""vlprobe.dataset."""
