#!/usr/bin/env python3
"""Regenerate the committed test corpora.

Run with Debian's interpreter, which has numpy:

    /usr/bin/python3 scripts/gen-testdata.py [npy] [npz] [example]

With no argument it writes every corpus. Each corpus lives in its own module
under scripts/testdata/ and writes into the package's testdata/ folder:

    npy      -> npy/testdata/  (scripts/testdata/npy_corpus.py)
    npz      -> npz/testdata/  (scripts/testdata/npz_corpus.py)
    example  -> examples/      (scripts/testdata/example_corpus.py)

Outputs are deterministic: running twice gives the same bytes.
"""
import importlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "testdata"))

CORPORA = {"npy": "npy_corpus", "npz": "npz_corpus", "example": "example_corpus"}


def main(argv):
    names = argv or list(CORPORA)
    for name in names:
        if name not in CORPORA:
            sys.exit(f"gen-testdata: unknown corpus {name!r} (have: {', '.join(CORPORA)})")
        mod = importlib.import_module(CORPORA[name])
        mod.generate(ROOT)


if __name__ == "__main__":
    main(sys.argv[1:])
