"""Build hook: the optional C tokenizer of ``rm.read_run`` (metadata lives in pyproject.toml).

The extension is ``optional``: without a C compiler (or Python's headers) the install still
succeeds and ``rm.read_run`` uses its arrow-based readers, which return the same values.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "reteco_measures.io._runparse",
            sources=["reteco_measures/io/_runparse.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
