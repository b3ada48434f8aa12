//go:build !linux

package indexer

// lowerPriority leaves the priority alone: background indexing is a
// mount's, and mounts are Linux's.
func lowerPriority() error { return nil }
