"""Training code that is not part of the runtime package (as open_clip keeps ``open_clip_train/``
apart): an installed vlprobe (``pip install`` from a clone) and the published Space do not carry it.

* :mod:`training.mini_clip`: trains ``models/mini-clip``, vlprobe's offline default model
  (entry point: ``scripts/train_mini_clip.py``; tests: ``tests/test_mini_clip.py``).

Import it from a checkout, with the repository root on ``sys.path`` (the script and the tests do so).
"""
