//go:build linux

package fs

import "testing"

// TestMaxReadFitsThePipe: a read reply (16-byte header, the data, and the
// page go-fuse keeps free) must fit a pipe of pipe-max-size bytes, or the
// reply is copied instead of spliced.
func TestMaxReadFitsThePipe(t *testing.T) {
	for _, c := range []struct{ pipeMax, page, want int }{
		{1 << 20, 4096, 1<<20 - 8<<10}, // Linux's default pipe-max-size
		{1<<20 + 8<<10, 4096, 1 << 20}, // raised just enough
		{4 << 20, 4096, 1 << 20},       // never past what the kernel sends
		{1 << 20, 64 << 10, 1<<20 - 128<<10},
		{64 << 10, 4096, 1 << 20}, // tiny pipes: give up splicing, keep big requests
	} {
		got := maxReadFor(c.pipeMax, c.page)
		if got != c.want {
			t.Errorf("maxReadFor(%d, %d) = %d, want %d", c.pipeMax, c.page, got, c.want)
		}
		if got%c.page != 0 {
			t.Errorf("maxReadFor(%d, %d) = %d is not a page multiple", c.pipeMax, c.page, got)
		}
		if got < 1<<20 && 16+got+c.page > c.pipeMax {
			t.Errorf("maxReadFor(%d, %d) = %d: the reply does not fit the pipe", c.pipeMax, c.page, got)
		}
	}
}
