"""Errors raised by attnlab. All are ValueError subclasses, so `except ValueError` catches them."""


class AttentionInputError(ValueError):
    """An argument has the wrong shape, dtype or values. The message names the argument."""


class EmptyVisibilityError(AttentionInputError):
    """A valid query may read no key at all, so its softmax has nothing to normalise.

    Padding queries (``query_valid`` False) are exempt: they get zero output instead.
    """
