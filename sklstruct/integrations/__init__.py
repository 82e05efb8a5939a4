"""Bridges from sklstruct's models to other libraries.

Each submodule needs its library, an optional dependency, and is imported
only when asked for:

* :mod:`sklstruct.integrations.spacy_component`: the spaCy pipeline
  components ``"sklstruct_ner"`` and ``"sklstruct_tagger"``
  (``pip install "sklstruct[spacy]"``).
"""
