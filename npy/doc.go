// Package npy reads and writes the header of NumPy's .npy format
// (NEP 1 and numpy/lib/format.py, versions 1.0, 2.0 and 3.0).
//
// It parses the header's Python literal without evaluating anything, models
// the dtype it describes, renders it as the header.json that npzfs serves,
// and writes headers byte for byte as numpy 1.24+ does. It uses the standard
// library only and treats every input as hostile.
package npy
