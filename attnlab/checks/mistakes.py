"""Former home of the mistake models; they now live in their topic modules, next to their explanations.

Kept for chapter 5, which imports two of them: ``from attnlab.checks import mistakes``.
"""
from .backward import backward_dk_untransposed, backward_without_scale  # noqa: F401
