"""vlprobe's training code, apart from the runtime package ``vlprobe`` (as open_clip keeps
``open_clip_train`` beside ``open_clip``): installed with vlprobe, never imported by it, and not
uploaded with the published Space.

* :mod:`vlprobe_train.mini_clip`: trains ``models/mini-clip``, vlprobe's offline default model;
  run it with ``python -m vlprobe_train`` (:mod:`vlprobe_train.__main__`; tests: ``tests/test_mini_clip.py``).
"""
