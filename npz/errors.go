package npz

import "github.com/npzfs/npzfs/zip"

// The errors of the zip layer, under the names npz has always given them.
type (
	// FormatError reports a malformed archive or member and the byte
	// offset in the archive file where it was found.
	FormatError = zip.FormatError
	// MethodError reports a member npzfs lists but cannot read: an
	// unsupported compression method, or encryption.
	MethodError = zip.MethodError
)

// MethodName names a zip compression method as APPNOTE does.
func MethodName(m uint16) string { return zip.MethodName(m) }
