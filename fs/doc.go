// Package fs serves an npz.Archive as a read-only FUSE filesystem with
// go-fuse's v2 node API: folders and files from the archive's tree, stored
// reads spliced from the archive file, deflated reads through the
// checkpointed inflater, every writing operation refused with EROFS.
package fs
