// Package npz opens a NumPy .npz archive (a zip of .npy members) and turns
// it into the tree npzfs serves: each member byte for byte, and for each
// .npy member a folder of views (header.json and raw.bin).
//
// Reading an array never copies the member: stored members expose their
// byte range in the archive file, so the mount can splice it to the kernel;
// deflated members are read through a checkpointed inflater that resumes
// near any offset. It uses the standard library, npy, zip, inflate and
// source only.
//
// Open reads the end record and the central directory through package zip
// and builds the tree from them; local headers and npy headers are read
// lazily, once per member, safely under concurrency. Every parser treats
// its input as hostile. docs/archive.md describes what is served.
package npz
