//go:build linux

package daemon

import (
	"bytes"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/internal/english"
)

// TestStatusCountsInWords: npzfs status says "1 request", "1 hit", "2
// misses": a count of one takes the singular, others the plural.
func TestStatusCountsInWords(t *testing.T) {
	st := Status{
		Mountpoint: "/mnt/run", PID: 4242, Log: "syslog", Answering: true,
		Dataset: Dataset{
			Source: "s3://bucket/run.npz", Kind: "archive",
			SpanCache: SpanCache{Hits: 1, Misses: 2},
			Remote:    &Remote{Requests: 1, BlockHits: 2, BlockMisses: 1, DiskHits: 1},
		},
	}
	st.Served.Reads, st.Served.Pushes = 1, 3
	var out bytes.Buffer
	st.WriteText(&out)
	for _, want := range []string{
		"served      0 in 1 read and 3 pushes\n",
		"span cache  1 hit, 2 misses;",
		"remote      1 request (0 retried), 0 fetched; blocks: 2 hits, 1 miss,",
		"disk cache  1 block from it;",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("npzfs status lacks %q:\n%s", want, out.String())
		}
	}
	for n, want := range map[int]string{0: "0 entries", 1: "1 entry", 2: "2 entries"} {
		if got := english.Plural(n, "entry"); got != want {
			t.Errorf("english.Plural(%d, entry) = %q, want %q", n, got, want)
		}
	}
}
