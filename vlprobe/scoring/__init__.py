"""vlprobe.scoring."""
