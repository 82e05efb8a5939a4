"""What the transformers of this package share."""


class _SentencesOut:
    """For transformers whose output is sentences (StackedSentences), not a
    table: ``set_output`` refuses pandas and polars containers clearly."""

    def set_output(self, *, transform=None):
        """Only the default output: these transformers return sentences.

        Parameters
        ----------
        transform : {"default"} or None
        """
        if transform not in (None, "default"):
            raise ValueError(f"{type(self).__name__}.set_output(transform={transform!r}): "
                             "the output is a list of sentences (StackedSentences: one "
                             "feature matrix per sentence), not a table, so it cannot be a "
                             "pandas or polars container")
        return self
