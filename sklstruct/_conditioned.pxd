# Declarations of the conditioned expectations (see _conditioned.pyx), shared
# with the learners' Cython loops; the structs are _forward_backward's.

from sklstruct._forward_backward cimport FBWork, Lattice

cdef void add_conditioned(const Lattice* lat, FBWork* w, const int* gold, const double* c,
                          double* node, double* chain) noexcept nogil
