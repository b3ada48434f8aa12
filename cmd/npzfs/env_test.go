package main

import (
	"slices"
	"testing"

	"github.com/npzfs/npzfs/dataset"
)

// TestHeadersFromEnvironment: NPZFS_HEADERS adds headers, one a line, to
// those given with --header, so that a caller (the Python package) can
// keep them out of the command line.
func TestHeadersFromEnvironment(t *testing.T) {
	t.Setenv(headerEnv, "Authorization: Bearer x\nX-Team: a")
	rf := remoteFlags{headers: []string{"X-Flag: 1"}, diskCacheMB: 1}
	if err := rf.check(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"X-Flag: 1", "Authorization: Bearer x", "X-Team: a"}; !slices.Equal(rf.headers, want) {
		t.Errorf("headers %q, want %q", rf.headers, want)
	}
}

// TestSourceFromEnvironment: NPZFS_SOURCE_URL gives the whole URL of the
// one the command line shows without its secrets, and nothing else.
func TestSourceFromEnvironment(t *testing.T) {
	full := "https://user:pw@h/x.npz?X-Amz-Signature=abc"
	t.Setenv(sourceEnv, full)
	if got := fromSourceEnv(dataset.Redact(full)); got != full {
		t.Errorf("fromSourceEnv(%q) = %q, want %q", dataset.Redact(full), got, full)
	}
	for _, other := range []string{"https://h/y.npz", "/data/x.npz", "s3://b/x.npz"} {
		if got := fromSourceEnv(other); got != other {
			t.Errorf("fromSourceEnv(%q) = %q", other, got)
		}
	}
}
