"""The book's drawn diagrams, as SVG made by code (the guide for chapter authors comes with the full set)."""
from .backward import backward_graph
from .block import transformer_block
from .heads import head_split, kv_sharing
from .pipeline import qkv_pipeline
from .reads import who_reads_whom

__all__ = ["backward_graph", "head_split", "kv_sharing", "qkv_pipeline", "transformer_block", "who_reads_whom"]
