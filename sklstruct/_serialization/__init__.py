"""The pieces of :mod:`sklstruct.serialization`: ``codec`` turns plain data
(numbers, strings, lists, dicts, NumPy arrays, sparse matrices) into a JSON
tree and ``.npy`` entries and back, strictly; ``classes`` says which classes a
model file may name, which of their attributes it stores, and how a loaded
object is checked and its caches rebuilt."""
