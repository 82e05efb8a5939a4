"""Build script for sklstruct: compiles the Cython decoding kernels."""
from glob import glob

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, find_packages, setup

# Every private kernel module ``sklstruct/**/_name.pyx`` is compiled.
extensions = [
    Extension(
        path[:-4].replace("/", "."),
        [path],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3"],
    )
    for path in sorted(glob("sklstruct/**/_*.pyx", recursive=True))
]

with open("README.rst", encoding="utf-8") as f:
    long_description = f.read()

setup(
    name="sklstruct",
    version="0.1.0",
    description="scikit-learn compatible structured max-margin learners for "
    "sequence labeling and constituency parsing",
    long_description=long_description,
    long_description_content_type="text/x-rst",
    license="BSD-3-Clause",
    python_requires=">=3.9",
    packages=find_packages(include=["sklstruct", "sklstruct.*"]),
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
    install_requires=["numpy>=1.23", "scipy>=1.9", "scikit-learn>=1.3", "joblib>=1.2"],
    extras_require={
        "test": ["pytest>=7", "hypothesis>=6"],
        "benchmark": ["python-crfsuite>=0.9.9"],
    },
    entry_points={"console_scripts": ["sklstruct=sklstruct.__main__:main"]},
    zip_safe=False,
)
