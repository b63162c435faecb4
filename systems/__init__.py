"""One module per system; ``ALL`` lists them in matching order.

Each module defines ``system`` (a ReFrame system entry) and
``environments`` (the programming environments its partitions use).
``local`` matches any host name, so it stays last.
"""
from systems import local

ALL = [local]
