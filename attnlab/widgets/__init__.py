"""Interactive explorers for the book (ipywidgets).

Each explorer is a function returning a widget. The state it shows is computed by the pure
functions in :mod:`attnlab.widgets.state` (tested against the reference package); the
widgets only draw it. ``offline=True`` gives a version made of precomputed frames that keeps
working in the static HTML book, where no kernel runs.
"""
from . import state
from .convex import convex_combination_explorer
from .gqa import gqa_explorer
from .heads import head_explorer
from .mask import mask_explorer
from .online_softmax import online_softmax_explorer
from .scaling import scaling_explorer

__all__ = ["convex_combination_explorer", "gqa_explorer", "head_explorer", "mask_explorer", "online_softmax_explorer",
           "scaling_explorer", "state"]
