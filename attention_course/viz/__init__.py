"""Altair charts that stay interactive in the static book (tooltips, selections, dropdowns, sliders).

Every chart takes a ``description``: it becomes the chart's alt text (``aria-label``) in the book.
The general charts are in this package; each chapter's own are in its folder (``charts.py``); all are
importable from here, each module imported when one of its charts is first used.
"""

from __future__ import annotations

from attention_course.core.facade import lazy

_CH = "attention_course.ch{:02d}_{}.charts".format
_NAMES = {
    "enable_renderer": f"{__name__}.renderer",
    **dict.fromkeys(["attention_heatmap", "lines", "tooltips"], f"{__name__}.charts"),
    "attention_playground": _CH(1, "sequence_models"),
    **dict.fromkeys(["distribution_over_training", "gumbel_samples", "local_window", "timing"],
                    _CH(2, "soft_hard_attention")),
    **dict.fromkeys(["token_layout", "token_highlight", "score_dots", "seed_spread"],
                    _CH(3, "timestep_feature_attention")),
    **dict.fromkeys(["scaling_chart", "cost_chart", "score_comparison"], _CH(4, "score_functions")),
    **dict.fromkeys(["caption_attention", "draw_window", "glimpse_paths", "image_row"], _CH(6, "image_captioning")),
    **dict.fromkeys(["head_view", "head_grid"], _CH(9, "bert")),
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy(__name__, _NAMES)
