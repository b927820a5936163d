"""The topic modules, imported in one place so that every checker is registered.

Adding a topic: write ``attnlab/checks/<topic>.py`` and add its name here.
"""
from . import (  # noqa: F401
    answers,
    attention,
    backward,
    causal,
    chunked,
    cost,
    heads,
    masks,
    pretrained,
    softmax,
    structure,
)
