"""vlprobe: probe vision-and-language models on linguistic phenomena with foils.

Data flow (one direction only)::

    dataset folder (parquet + card + vlprobe.yaml) --load_dataset--> rows
    rows --ItemSpec--> Items (m images, n texts, gold m x n, tags)
    Items --scorer--> score matrices S (m x n)
    (S, gold, tags) --metric (metric/valse_metric.py)--> pairwise / group / set scores, CIs, per tag
"""

__version__ = "0.1.0"

from .items import Item, ItemError  # noqa: F401
from .spec import ItemSpec, SpecError, find_spec  # noqa: F401
