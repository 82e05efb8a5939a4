"""Data in the layout of the estimators: CoNLL files, corpus loaders and a
generated chunking corpus.

The sequence-labeling estimators of :mod:`sklstruct` take ``X`` as a list of
sentences, each sentence a list of tokens, and ``y`` as a list of label
sequences; the parser takes trees.  This package produces data in exactly
that layout:

* :func:`read_conll` / :func:`write_conll` read and write the column format
  of the CoNLL shared tasks (one token per line, blank line between
  sentences); :func:`read_conll_bag` reads such files into Dask bags, on
  the workers.
* :func:`load_conll2000`, :func:`load_conll2002_esp` and
  :func:`load_treebank` read local copies of the CoNLL-2000 chunking corpus,
  the CoNLL-2002 Spanish NER corpus and the Penn Treebank sample.  These are
  *not* distributed with the package: they are looked for in
  :func:`get_data_home` (``data_home=``, else ``$SKLSTRUCT_DATA``, else
  ``~/sklstruct_data``) and, for the treebank sample, in NLTK's data
  directories.
* :func:`make_chunking_corpus` generates an English-like chunking corpus from
  a small probabilistic grammar shipped with the package, so examples and
  tests run without external data.
"""
from ._chunk_grammar import make_chunking_corpus
from ._conll import read_conll, write_conll
from ._conll_bag import read_conll_bag
from ._loaders import get_data_home, load_conll2000, load_conll2002_esp, load_treebank

__all__ = [
    "get_data_home",
    "load_conll2000",
    "load_conll2002_esp",
    "load_treebank",
    "make_chunking_corpus",
    "read_conll",
    "read_conll_bag",
    "write_conll",
]
