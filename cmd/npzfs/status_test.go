//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/daemon"
)

// TestStatusJSONGolden keeps npzfs status --json's fields, which scripts
// read, as the README documents them: every field of a mount is set here,
// and the document is compared with testdata/status.golden (-update
// rewrites it).
func TestStatusJSONGolden(t *testing.T) {
	st := daemon.Status{
		Mountpoint: "/mnt/run", PID: 4242, Started: time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC),
		Uptime: 61.5, Options: []string{"--cache-mb=64", "--index"}, Log: "/var/log/npzfs.log", Owner: 4100,
		Dataset: daemon.Dataset{
			Source: "s3://bucket/run.npz", Kind: "archive", Members: ptr(12), Failing: ptr(1), ArchivesOpen: ptr(0),
			SpanCache: daemon.SpanCache{Hits: 100, Misses: 7, Bytes: 3 << 20, Budget: 16 << 20},
			Indexes:   &daemon.SavedIndexes{Folder: "/home/me/.cache/npzfs/index/v1", Loaded: 2, Refused: 1, Saved: 1},
			Remote: &daemon.Remote{Requests: 14, Retries: 1, BytesFetched: 1 << 20, BlockHits: 40,
				BlockMisses: 12, DiskHits: 3, MemoryBytes: 3 << 18, DiskCacheBytes: 1 << 22},
			Indexing: &daemon.Indexing{Members: 5, MembersDone: 3, Failed: 0, Bytes: 5 << 30,
				BytesDone: 3 << 30, Rate: 4e8, SecondsLeft: 5.4, Done: false},
			Verification: &daemon.Verification{Mode: "auto", Passes: 9, Saved: 1, Unverified: 1, UnverifiedBytes: 1 << 30, FailingCount: 1,
				Failing: []daemon.FailingMember{{Name: "images.npy", Reason: "CRC-32 mismatch: its bytes give 0badc0de, the archive records 12345678", Reads: 2}}},
		},
		Answering: true,
	}
	st.Served.Reads, st.Served.Pushes, st.Served.Bytes = 3456, 12, 1<<30
	st.Served.Requests = map[string]int64{"lookup": 40, "ioctl": 12, "read": 3456, "forget": 2}
	var out bytes.Buffer
	if err := writeJSON(&out, struct {
		Mounts []daemon.Status `json:"mounts"`
	}{[]daemon.Status{st}}); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "status.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("npzfs status --json prints:\n%s\nwant (testdata/status.golden):\n%s", out.Bytes(), want)
	}
}

func ptr[T any](v T) *T { return &v }
