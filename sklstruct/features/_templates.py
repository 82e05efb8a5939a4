"""The template language: parsing a template string into its atoms, and
expanding the templates over a window.

The language itself is described in :mod:`sklstruct.features`.  A parsed
template instance is ``(name, atoms)``: its canonical name and a tuple of
atoms ``(kind, arg, base_name, column, offset)``, which
``_tokens._Corpus.template`` evaluates.
"""
import itertools
import re

from .._validation import describe
from ._tokens import _DERIVED, _FLAGS, _POSITION_FLAGS

#: Largest offset a template may read (``word[+1000]``), hence the largest
#: ``window``: beyond it every value is ``__BOS__`` or ``__EOS__`` anyway.
_MAX_OFFSET = 1000
#: Largest column number (``colN``) and affix length (``prefixN``).
_MAX_NUMBER = 10**6
#: Most template instances after window expansion: the output has up to one
#: feature per token and instance.
_MAX_INSTANCES = 10_000
#: Most atoms in all template instances together (conjunctions count each).
_MAX_ATOMS = 100_000

_ATOM_RE = re.compile(
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*(?::[^\s|\[\]()=]+)?)"
    r"(?:\((?P<src>[^\s|\[\]()=]+)\))?"
    r"(?:\[(?P<off>[+-]?[0-9]+)(?:\.\.(?P<end>[+-]?[0-9]+))?\])?"
)
_COL_RE = re.compile(r"col([0-9]+)")
_AFFIX_RE = re.compile(r"(prefix|suffix|cluster)([0-9]+)")


def _bounded_int(text, limit, what, template):
    """``int(text)`` of a ``[+-]digits`` string whose absolute value is at
    most ``limit``; ValueError otherwise (checked on the digits, so that a
    thousand-digit number is refused, not converted)."""
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > len(str(limit)) or int(digits) > limit:
        raise ValueError(
            f"Malformed template {describe(template)}: {what} {describe(text)} is too "
            f"large; at most {limit}."
        )
    return -int(digits) if text.startswith("-") else int(digits)


def _parse_column(name, template):
    """Canonical column name ('word', 'pos', 'colN', 'col:KEY') or None."""
    if name in ("word", "pos"):
        return name
    m = _COL_RE.fullmatch(name)
    if m:
        n = _bounded_int(m.group(1), _MAX_NUMBER, "column number", template)
        return "word" if n == 0 else f"col{n}"
    if name.startswith("col:"):
        key = name[4:]
        return key if key in ("word", "pos") else name
    return None


def _parse_atom(text, template):
    """Parse one atom into ``(kind, arg, column, (first, last), explicit_offset)``.

    ``kind`` is 'column', 'derived' (arg: 'lower', 'shape', ('prefix', N),
    ('suffix', N), ('cluster', N)), 'flag' (arg: the flag name) or 'bias'; ``column`` is the
    canonical column name ('word', 'pos', 'colN' or 'col:KEY'); the offsets
    ``first .. last`` are one offset (``first == last``) or the range of a
    disjunctive atom (``word[-3..-1]``).
    """
    m = _ATOM_RE.fullmatch(text)
    if m is None:
        raise ValueError(
            f"Malformed template {describe(template)}: cannot parse {describe(text)}; "
            "expected NAME, NAME(COLUMN), NAME[OFFSET], NAME[FIRST..LAST] or "
            "NAME(COLUMN)[OFFSET]."
        )
    name, src, off, end = m.group("name", "src", "off", "end")
    explicit = off is not None
    offset = _bounded_int(off, _MAX_OFFSET, "offset", template) if explicit else 0
    last = offset if end is None else _bounded_int(end, _MAX_OFFSET, "offset", template)
    if last < offset:
        raise ValueError(
            f"Malformed template {describe(template)}: the offsets of {describe(text)} "
            "are an empty range; write FIRST..LAST with FIRST <= LAST."
        )
    offset = (offset, last)
    column = "word"
    if src is not None:
        column = _parse_column(src, template)
        if column is None:
            raise ValueError(
                f"Malformed template {describe(template)}: {describe(src)} is not a column; "
                "expected word, pos, colN or col:KEY."
            )
    if name == "bias":
        if src is not None or explicit:
            raise ValueError(
                f"Malformed template {describe(template)}: 'bias' takes no column and "
                "no offset."
            )
        return ("bias", None, None, (0, 0), False)
    column_name = _parse_column(name, template)
    if src is not None and (column_name is not None or name in _POSITION_FLAGS):
        what = "column atom " if column_name is not None else ""
        raise ValueError(
            f"Malformed template {describe(template)}: {what}{describe(name)} takes no "
            "column argument."
        )
    if column_name is not None:
        return ("column", None, column_name, offset, explicit)
    if name in _DERIVED:
        return ("derived", name, column, offset, explicit)
    if name in _POSITION_FLAGS:
        return ("flag", name, None, offset, explicit)
    if name in _FLAGS:
        return ("flag", name, column, offset, explicit)
    m = _AFFIX_RE.fullmatch(name)
    if m:
        n = _bounded_int(m.group(2), _MAX_NUMBER, f"{m.group(1)} length", template)
        if n < 1:
            raise ValueError(
                f"Malformed template {describe(template)}: {describe(name)} needs a length N >= 1."
            )
        return ("derived", (m.group(1), n), column, offset, explicit)
    raise ValueError(
        f"Malformed template {describe(template)}: unknown template name {describe(name)} "
        "(other dict keys are read with col:KEY)."
    )


def _base_name(kind, arg, column):
    """Canonical name of an atom without its offset, e.g. 'suffix3(pos)'."""
    if kind == "bias":
        return "bias"
    if kind == "column":
        return column
    name = f"{arg[0]}{arg[1]}" if isinstance(arg, tuple) else arg
    return name if column in ("word", None) else f"{name}({column})"


def _atom_name(base, first, last):
    """``base`` at the offset ``first`` (``== last``), or over the range
    ``first .. last`` of a disjunctive atom."""
    if first != last:
        return f"{base}[{first:+d}..{last:+d}]"
    return base if first == 0 else f"{base}[{first:+d}]"


def _parse_templates(templates, window):
    """Parse and expand templates.

    Returns a list of template instances ``(name, atoms)`` where ``name`` is
    the canonical string and ``atoms`` a tuple of ``(kind, arg, base_name,
    column, offset)``; duplicates are dropped, order is kept.  A template
    with a disjunctive atom (``word[-3..-1]``) gives one instance per offset
    of its range (per combination of offsets, with several), all of the same
    name: their features are the same names, hence the same columns.
    """
    if len(templates) == 0:
        raise ValueError("templates must contain at least one template.")
    if len(templates) > _MAX_INSTANCES:
        raise ValueError(
            f"templates has {len(templates)} templates; at most {_MAX_INSTANCES} "
            "are allowed."
        )
    instances = {}
    n_atoms = 0
    for i, template in enumerate(templates):
        if not isinstance(template, str):
            raise ValueError(
                f"Template at position {i} must be a string, got {describe(template)}."
            )
        parts = [p.strip() for p in template.split("|", _MAX_ATOMS)]
        if len(parts) > _MAX_ATOMS:
            raise ValueError(
                f"Malformed template {describe(template)}: more than {_MAX_ATOMS} atoms."
            )
        atoms = [_parse_atom(p, template) for p in parts]
        if any(a[0] == "bias" for a in atoms) and len(atoms) > 1:
            raise ValueError(
                f"Malformed template {describe(template)}: 'bias' cannot be part of a "
                "conjunction."
            )
        if (atoms[0][0] == "bias" or any(a[4] for a in atoms)
                or all(a[0] == "flag" and a[1] in _POSITION_FLAGS for a in atoms)):
            shifts = [0]
        else:
            shifts = range(-window, window + 1)
        bases = [_base_name(kind, arg, col) for kind, arg, col, _, _ in atoms]
        # the instances of its ranges, bounded before any is built (capped as
        # counted: a product of thousands of ranges has thousands of digits)
        n_offsets = 1
        for _, _, _, (first, last), _ in atoms:
            n_offsets = min(n_offsets * (last - first + 1), _MAX_INSTANCES + 1)
        if n_offsets > _MAX_INSTANCES or n_offsets * len(atoms) > _MAX_ATOMS:
            raise ValueError(
                f"Malformed template {describe(template)}: its ranges of offsets give "
                f"{'more than ' + str(_MAX_INSTANCES) if n_offsets > _MAX_INSTANCES else n_offsets}"
                f" instances of {len(atoms)} atoms; at most {_MAX_INSTANCES} instances of "
                f"{_MAX_ATOMS} atoms in all are allowed."
            )
        for k in shifts:
            name = "|".join(_atom_name(b, first + k, last + k)
                            for b, (_, _, _, (first, last), _) in zip(bases, atoms))
            for offsets in itertools.product(*(range(first + k, last + k + 1)
                                               for _, _, _, (first, last), _ in atoms)):
                inst = tuple((kind, arg, base, col, off) for (kind, arg, col, _, _), base, off
                             in zip(atoms, bases, offsets))
                if instances.setdefault((name, inst), inst) is inst:
                    n_atoms += len(inst)
        if len(instances) > _MAX_INSTANCES or n_atoms > _MAX_ATOMS:
            raise ValueError(
                f"templates[:{i + 1}] with window={window} already expand to "
                f"{len(instances)} template instances of {n_atoms} atoms; at most "
                f"{_MAX_INSTANCES} instances of {_MAX_ATOMS} atoms are allowed (use "
                "fewer templates or a smaller window)."
            )
    return [(name, inst) for (name, _), inst in instances.items()]


def template_names(instances):
    """The names of template ``instances``, each once, in order (the
    instances of a disjunctive template share theirs)."""
    return list(dict.fromkeys(name for name, _ in instances))
