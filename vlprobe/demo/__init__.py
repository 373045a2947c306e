"""The Gradio Space's logic (``space/app.py`` builds the page from it), importable and testable
without a browser, thin over the library: models load with :mod:`vlprobe.scorers`, items are
scored by :mod:`vlprobe.engine`, every number comes from :mod:`vlprobe.metric`, dataset folders are
read by :mod:`vlprobe.dataset_folder`, results files by :mod:`vlprobe.report`.

* :mod:`.settings`: the owner's environment variables, the limits, which models and dataset
  folders may be used (``Settings(root)``: the root folder is passed in by the app);
* :mod:`.models`: the cache of loaded models, and a fast failure for a model that cannot be had;
* :mod:`.score`: the Score tab (one item: verdict, table, margins, differing words);
* :mod:`.examples`: the one-click gallery and rows of built dataset folders;
* :mod:`.benchmark`: the Benchmark tab (the first N items of a config, and browsing them);
* :mod:`.results`: the Results tab (results files side by side and beside the papers).
"""

from .settings import Settings, SpaceError

__all__ = ["Settings", "SpaceError"]
