"""What every tagger's fit on Dask bags starts with: each partition
stacked and checked on its worker, kept there as a future, and its feature
count, labels and sentence lengths brought to the client (small), so that
the client makes the label set without ever holding the sentences."""
import numpy as np

from .._dask import gather, partition_futures, release, submit_each
from .._validation import check_label_sequences
from ..chain import StackedSentences, as_stacked
from ._base import ChainTagger


# -- on the workers: plain module functions (pickled by reference) --------------------
def stack_partition(X_part, y_part, n_features):
    """One partition, stacked and checked: (StackedSentences, label sequences)."""
    data = as_stacked(X_part if isinstance(X_part, StackedSentences) else list(X_part),
                      n_features)
    y_part = list(y_part)
    check_label_sequences(y_part, data.lengths)
    return data, y_part


def _info(part):
    """(n_features, sorted labels, sentence lengths) of a stacked partition."""
    data, y_part = part
    labels = check_label_sequences(y_part, data.lengths)
    return data.n_features, np.unique(labels), data.lengths


def partition_codes(part, classes):
    """The label codes of a stacked partition into ``classes``."""
    data, y_part = part
    return ChainTagger()._encode(y_part, data, classes)    # the taggers' messages


# -- on the client --------------------------------------------------------------------
def bag_partitions(client, X, y, n_features, what):
    """``(parts, n_features, labels, lengths)`` of the bags X, y: futures of
    the stacked partitions (on their workers), the feature count they
    share, the sorted labels of each partition and its sentence lengths.
    Raises (naming ``what``) on bags without sentences or whose partitions
    disagree on the feature count; releases the futures on an error."""
    parts = partition_futures(client, stack_partition, X, y, n_features)
    try:
        info = gather(client, submit_each(client, _info, parts), what)
        if not info:
            raise ValueError(f"{what}: the bags have no partitions")
        widths = {f for f, _, _ in info}
        if len(widths) > 1:
            raise ValueError(f"X: the partitions' sentences have different feature counts "
                             f"{sorted(widths)}; they must all have the same")
        lengths = [np.asarray(n) for _, _, n in info]
        if sum(len(n) for n in lengths) == 0:
            raise ValueError("X: the bags hold no sentences")
    except BaseException:
        release(parts)
        raise
    return parts, widths.pop(), [c for _, c, _ in info], lengths
