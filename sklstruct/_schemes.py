"""The chunk tagging schemes IOB1, IOB2, IOBES and BILOU, once.

A label is ``"O"`` (outside every chunk) or a prefix, ``"-"`` and a chunk type
(``"B-NP"``).  Each scheme says which prefixes it has and two things about
them:

* how a sequence of labels reads as chunks (seqeval's strict mode,
  ``seqeval.scheme``): when a chunk starts at a token, when the next token is
  inside it, and when it ended well; :mod:`sklstruct.metrics` counts chunks
  by these rules;
* which label may follow which (:func:`sklstruct.chain.allowed_transitions`,
  the constraints of :class:`sklstruct.ConstrainedTagger`): the prefixes
  that continue a chunk, those that leave one open, and those after which it
  must go on.  IOB1, where ``I-`` may start a chunk, has no such rules.

BILOU is IOBES with ``U`` for ``S`` and ``L`` for ``E``.
"""
from typing import NamedTuple, Optional


def _rules(*patterns):
    """Patterns "PC=" : previous prefix P, current prefix C ("*": any), and
    whether the types must be equal ("="), differ ("!") or either ("*")."""
    return frozenset(patterns)


class Transitions(NamedTuple):
    """The transition rules of a scheme, as sets of prefixes."""
    #: prefixes that continue a chunk: they need an open chunk of their type before them
    continues: str
    #: prefixes that leave their chunk open
    opens: str
    #: prefixes after which the chunk must go on
    must_continue: str


class Scheme(NamedTuple):
    """A chunk tagging scheme."""
    #: its prefixes besides ``O``
    prefixes: str
    #: strict chunk rules (:func:`_rules` patterns): a chunk starts at a
    #: token; the next token is inside it; it ended well (its last token and
    #: the one after it: the next, or an ``O`` past the end of the sentence)
    start: frozenset
    inside: frozenset
    end: frozenset
    #: which label may follow which, or None (IOB1)
    transitions: Optional[Transitions]


SCHEMES = {
    "IOB1": Scheme("BI",
                   start=_rules("OI*", "II!", "BI*", "IB=", "BB="),
                   inside=_rules("BI=", "II="),
                   end=_rules("II!", "IO*", "IB*", "BO*", "BI!", "BB="),
                   transitions=None),
    "IOB2": Scheme("BI",
                   start=_rules("*B*"),
                   inside=_rules("BI=", "II="),
                   end=_rules("IO*", "II!", "IB*", "BO*", "BI!", "BB*"),
                   transitions=Transitions(continues="I", opens="BI", must_continue="")),
    "IOBES": Scheme("BIES",
                    start=_rules("*B*", "*S*"),
                    inside=_rules("BI=", "BE=", "II=", "IE="),
                    end=_rules("S**", "E**"),
                    transitions=Transitions(continues="IE", opens="BI", must_continue="BI")),
    "BILOU": Scheme("BILU",
                    start=_rules("*B*", "*U*"),
                    inside=_rules("BI=", "BL=", "II=", "IL="),
                    end=_rules("U**", "L**"),
                    transitions=Transitions(continues="IL", opens="BI", must_continue="BI")),
}
