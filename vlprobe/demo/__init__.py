"""The Gradio Space's logic (``space/app.py`` builds the page from it), importable and testable
without a browser, thin over the library: models load with :mod:`vlprobe.scorers`, items are
scored by :mod:`vlprobe.scoring.engine`, every number comes from :mod:`vlprobe.metric`, dataset folders are
read by :mod:`vlprobe.dataset.folder`, results files by :mod:`vlprobe.report`.

* :mod:`.settings`: the owner's environment variables, the limits, the model menu and its default,
  which dataset folders may be used (``Settings(root, models_file)``: both passed in by the app);
* :mod:`.hub`: whether the Hub answers (asked quickly, the answer kept), and whether a model can be had;
* :mod:`.models`: the cache of loaded models, a model's tokenizer, and a
  fast failure for a model that cannot be had;
* :mod:`.score`: the Score tab (one item: verdict, ties by the chosen policy, table, margins, words);
* :mod:`.examples`: the gallery (what a model can read), configs with rows, rows of dataset folders,
  stratified samples;
* :mod:`.benchmark`: the Benchmark tab (a sample of a config, its results file, browsing items);
* :mod:`.results`: the Results tab (results files side by side and beside the papers);
* :mod:`.glossary`: what each metric means, and which way is better.
"""

from .settings import Settings, SpaceError

__all__ = ["Settings", "SpaceError"]
