"""Altair charts that stay interactive in the static book (tooltips, selections, dropdowns, sliders).

Every chart takes a ``description``: it becomes the chart's alt text (``aria-label``) in the book.
One module per family of charts; all are importable from here.
"""

from .charts import attention_heatmap, lines
from .heads import head_grid, head_view
from .images import caption_attention, draw_window, glimpse_paths, image_row
from .playground import attention_playground
from .renderer import enable_renderer
from .sampling import *  # noqa: F403  (Chapter 2: distributions over training, samples, windows)
from .sampling import __all__ as _sampling_all
from .scores import *  # noqa: F403  (Chapter 4: score statistics)
from .scores import __all__ as _scores_all
from .text import *  # noqa: F403  (Chapter 3: token highlight)
from .text import __all__ as _text_all

__all__ = ["enable_renderer", "attention_heatmap", "lines", "attention_playground", "caption_attention",
           "draw_window", "glimpse_paths", "image_row", "head_view", "head_grid", *_sampling_all, *_scores_all,
           *_text_all]
