// Package npy reads and writes the header of NumPy's .npy format
// (NEP 1 and numpy/lib/format.py, versions 1.0, 2.0 and 3.0).
//
// It parses the header's Python literal without evaluating anything, models
// the dtype it describes, renders it as the header.json that npzfs serves,
// and writes headers byte for byte as numpy 1.24+ does. It uses the standard
// library only and treats every input as hostile.
//
// ReadHeader accepts what numpy 1.24's np.load accepts, with the same
// meaning, except for a few forms refused on purpose (negative or boolean
// dimensions, sizes beyond int64, numpy's (base, dtype) union types, bytes
// literals, \N{...} escapes, nesting deeper than 64); docs/header-json.md
// lists them with the header.json schema. The committed corpus under
// testdata/ (made by scripts/testdata/npy_corpus.py with numpy itself) pins
// all of this down.
package npy
