"""
A sklstruct tagger as a spaCy component: entities in ``doc.ents``
=================================================================

A pipeline of sklstruct's named-entity features and a structured perceptron
is trained, saved to a model file and added to a blank spaCy pipeline as the
``"sklstruct_ner"`` component, which reads each document's tokens (their
text and their ``tag_``, the columns the model was trained on), predicts
their labels and sets the chunks of the labels as ``doc.ents``.

The left plot scores the entities twice on the test sentences: with spaCy's
own scorer (``nlp.evaluate``, on ``doc.ents``) and with sklstruct's
``chunk_report`` on the predicted labels (strict IOB2 rules).  The two agree
because the component reads the labels by the same rules.  The right plot
times ``nlp.pipe`` on the test documents for several batch sizes: each
batch is one ``predict`` call of the model.  The times are those of the
machine that ran the script.

By default it runs in seconds on a chunking corpus that the package
generates (1,000 training and 200 test sentences of (word, POS) tokens),
whose phrase chunks (NP, VP, PP, ADJP, ...) stand in for
entities; ``--conll2002`` trains on the CoNLL-2002 Spanish training file
and tests on ``esp.testb`` (persons, places, organizations, others).
"""
import argparse
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import spacy  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from spacy.tokens import Doc  # noqa: E402
from spacy.training import Example  # noqa: E402

import sklstruct.integrations.spacy_component  # noqa: E402,F401  (registers the factories)
from sklstruct import StructuredPerceptronTagger, feature_set  # noqa: E402
from sklstruct.datasets import load_conll2002_esp, make_chunking_corpus  # noqa: E402
from sklstruct.metrics import chunk_report  # noqa: E402
from sklstruct.serialization import save_model  # noqa: E402

BATCH_SIZES = (1, 4, 16, 64, 256)


def data(conll2002):
    """(train, test) sentences of (word, POS) tokens and their labels, and the
    language of the blank spaCy pipeline."""
    if conll2002:
        return load_conll2002_esp("train"), load_conll2002_esp("testb"), "es"
    X, y = make_chunking_corpus(1200, random_state=0)
    return (X[:1000], y[:1000]), (X[1000:], y[1000:]), "en"


def strict_iob2(labels):
    """The labels with each ``I-X`` that continues no ``X`` chunk set to ``O``:
    the chunks that strict IOB2 reads (and spaCy's ``doc.ents`` accepts)."""
    out = []
    for label in labels:
        if label.startswith("I-") and (not out or out[-1] == "O" or out[-1][2:] != label[2:]):
            label = "O"
        out.append(label)
    return out


def docs_of(nlp, sentences):
    """Docs of the sentences' words, with their POS tags as ``tag_``."""
    docs = []
    for sentence in sentences:
        doc = Doc(nlp.vocab, words=[word for word, _ in sentence])
        for token, (_, pos) in zip(doc, sentence):
            token.tag_ = pos
        docs.append(doc)
    return docs


def run(train, test, lang, folder):
    model = make_pipeline(feature_set("ner"),
                          StructuredPerceptronTagger(max_iter=5, random_state=0))
    model.fit(*train)
    path = Path(folder) / "ner.skl"
    save_model(model, path)

    nlp = spacy.blank(lang)
    nlp.add_pipe("sklstruct_ner", config={"model_path": str(path),
                                          "columns": ["text", "tag_"]})
    X, y = test
    y = [strict_iob2(labels) for labels in y]      # a few gold I-X after O in CoNLL-2002
    # spaCy's scores of doc.ents against the gold entities
    gold = [Doc(nlp.vocab, words=[word for word, _ in sentence], ents=labels)
            for sentence, labels in zip(X, y)]
    examples = [Example(doc, reference) for doc, reference in zip(docs_of(nlp, X), gold)]
    spacy_scores = nlp.evaluate(examples)
    # sklstruct's scores of the labels the model predicts
    report = chunk_report(y, model.predict(X), scheme="IOB2")
    print(f"entity F1: spaCy (doc.ents) {100 * spacy_scores['ents_f']:.2f}, "
          f"sklstruct (labels) {100 * report.f1:.2f}")

    timings = []
    docs = docs_of(nlp, X)
    for batch_size in BATCH_SIZES:
        start = time.perf_counter()
        for _ in nlp.pipe(docs, batch_size=batch_size):
            pass
        timings.append(len(docs) / (time.perf_counter() - start))
        print(f"batch_size={batch_size:4d}: {timings[-1]:8.0f} documents per second")
    return spacy_scores, report, timings


def plot(spacy_scores, report, timings, out):
    types = sorted(report.per_type)
    per_type = spacy_scores["ents_per_type"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    x = np.arange(len(types) + 1)
    width = 0.38
    spacy_f = [100 * spacy_scores["ents_f"]] + [100 * per_type.get(t, {}).get("f", 0.0)
                                                for t in types]
    sklstruct_f = [100 * report.f1] + [100 * report.per_type[t].f1 for t in types]
    left.bar(x - width / 2, spacy_f, width, label="spaCy's scorer on doc.ents")
    left.bar(x + width / 2, sklstruct_f, width, label="sklstruct's chunk_report on labels")
    left.set_xticks(x, ["all"] + types)
    left.set(ylabel="F1 (%)", ylim=(0, 120), title="Entity F1 on the test sentences")
    left.legend(fontsize=8, loc="upper center", ncol=2)
    right.plot(BATCH_SIZES, timings, marker="o")
    right.set_xscale("log", base=2)
    right.set_xticks(BATCH_SIZES, [str(b) for b in BATCH_SIZES])
    right.set(xlabel="nlp.pipe batch_size (documents per predict call)",
              ylabel="documents per second", title="Throughput of nlp.pipe", ylim=(0, None))
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"wrote {Path(out).name}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("--conll2002", action="store_true",
                        help="train on CoNLL-2002 Spanish, test on esp.testb (a minute)")
    parser.add_argument("--out", default="spacy_ner.png")
    args = parser.parse_args(argv)
    train, test, lang = data(args.conll2002)
    with tempfile.TemporaryDirectory() as folder:
        scores = run(train, test, lang, folder)
    plot(*scores, args.out)


if __name__ == "__main__":
    main()
