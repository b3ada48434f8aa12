// Package testfiles lays out files for tests: copies of the test corpus
// placed where a test wants them, and streams written as other writers
// write them.
package testfiles

import (
	"bytes"
	"compress/flate"
	"os"
	"path/filepath"
	"testing"
)

// Copy copies the file src to dir/rel, making the folders rel names, and
// returns the new path. It ends the test on any error.
func Copy(t testing.TB, src, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Chunked deflates data at level in chunks of chunk bytes as a SOZip
// writer does: each chunk by a writer of its own, so that no match
// reaches back past its start, ended (but for the last) by a sync flush
// and a second empty stored block, as zlib's Z_FULL_FLUSH after
// Z_SYNC_FLUSH writes it. It returns the stream and where each chunk
// but the first starts in it, and ends the test on any error.
func Chunked(t testing.TB, data []byte, chunk, level int) ([]byte, []int64) {
	t.Helper()
	var buf bytes.Buffer
	var starts []int64
	for off := 0; off < len(data); off += chunk {
		if off > 0 {
			starts = append(starts, int64(buf.Len()))
		}
		w, err := flate.NewWriter(&buf, level)
		if err == nil {
			_, err = w.Write(data[off:min(off+chunk, len(data))])
		}
		if err == nil && off+chunk >= len(data) {
			err = w.Close()
		} else if err == nil {
			err = w.Flush()
			buf.Write([]byte{0, 0, 0, 0xff, 0xff})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes(), starts
}
