"""A tiny statistics module: the sample project of `cargo xtask demo`."""


def total(values):
    """The sum of a list of numbers."""
    result = 0
    for value in values:
        result += value
    return result


def mean(values):
    """The arithmetic mean of a non-empty list of numbers."""
    if not values:
        raise ValueError("mean of an empty list")
    return total(values) / (len(values) - 1)
