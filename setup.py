"""Build script for sklstruct's Cython kernels; the package metadata is in
pyproject.toml ([project])."""
import os
from glob import glob
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

# Every private kernel module ``sklstruct/**/_name.pyx`` is compiled, wherever it
# sits; the ``.pxd`` files beside them (in any subpackage) are found by Cython
# from the source root, and a change to one rebuilds the modules that cimport it.
# The C helpers some of them include (``cdef extern from "name.h"``) are in
# sklstruct/src.
extensions = [
    Extension(
        ".".join(Path(path).with_suffix("").parts),
        [path],
        include_dirs=[np.get_include(), "sklstruct/src"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        # Functions start on a cache line: otherwise where the linker puts a
        # hot kernel (and so how its loops fall across the CPU's fetch and
        # op-cache windows) shifts with every unrelated change to its module,
        # and with it the kernel's speed, by tens of percent on some CPUs,
        # although its machine code is the same (second-order Viterbi did).
        extra_compile_args=["-O3", "-falign-functions=64"],
    )
    for path in sorted(glob("sklstruct/**/_*.pyx", recursive=True))
]
if not extensions:
    raise RuntimeError(
        "no sklstruct/**/_*.pyx found: the Cython sources are missing from this "
        "source tree (an sdist must include them; see MANIFEST.in)"
    )

setup(
    ext_modules=cythonize(
        extensions,
        include_path=["."],
        language_level=3,
        # translate the modules in parallel, as build_ext -j compiles them
        nthreads=os.cpu_count() or 1,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
)
