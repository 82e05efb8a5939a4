"""Constituency parsing: trees, binarization, grammars, PARSEVAL metrics
and the max-margin parser."""

from .tree import (  # noqa: F401
    Tree,
    expand_unary,
    preprocess,
    read_ptb,
    read_trees,
    strip_function_tags,
    write_ptb,
)
from .binarize import base_label, binarize, is_artificial, unbinarize  # noqa: F401
from .grammar import Grammar  # noqa: F401
from .evalb import bracket_counts, parseval, parseval_f1, parseval_scorer  # noqa: F401
from .parser import F1MaxMarginParser  # noqa: F401,E402
from .pcfg import PCFGParser  # noqa: F401,E402
