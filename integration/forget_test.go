//go:build linux

package integration

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// dropDentries makes the kernel forget the dentries and inodes it has
// cached (all of them, machine-wide), which sends FORGETs to the daemon.
// Only root can; others report false.
func dropDentries() bool {
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0) == nil
}

// TestForgottenNodesComeBack: the server keeps an entry only while the
// kernel holds lookups of it. Four walkers stat, list and read every file
// of a 3,000-array archive at once, over and over, while the kernel is
// made to forget everything it cached between (and during) rounds: every
// answer stays right (inode numbers stable, contents byte for byte, no
// ESTALE), and the daemon lives.
func TestForgottenNodesComeBack(t *testing.T) {
	const n = 3000
	archive := manyArrays(t, n)
	dir := mount(t, archive)
	pid := theDaemon(t, dir)

	want := func(i int) []byte {
		b := make([]byte, 12)
		for j := 0; j < 3; j++ {
			binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(float32(i+j)))
		}
		return b
	}
	inos := make([]uint64, n) // of KEY/raw.bin, from the first round
	var stop sync.WaitGroup
	rounds := 4
	canDrop := dropDentries()
	if !canDrop {
		t.Logf("not root: the kernel forgets only under memory pressure; checking concurrent walks alone")
	}
	done := make(chan struct{})
	if canDrop {
		// Forget during the walks too, not only between them.
		stop.Add(1)
		go func() {
			defer stop.Done()
			for {
				select {
				case <-done:
					return
				case <-time.After(20 * time.Millisecond):
					dropDentries()
				}
			}
		}()
	}
	for round := 0; round < rounds; round++ {
		names, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 3*n {
			t.Fatalf("round %d: %d entries, want %d", round, len(names), 3*n)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 4 {
					key := filepath.Join(dir, fmt.Sprintf("a%06d", i))
					var st syscall.Stat_t
					if err := syscall.Stat(key+"/raw.bin", &st); err != nil {
						errs <- fmt.Errorf("round %d: stat %s/raw.bin: %v", round, key, err)
						return
					}
					if round == 0 {
						inos[i] = st.Ino
					} else if inos[i] != st.Ino {
						errs <- fmt.Errorf("round %d: %s/raw.bin has inode %d, was %d", round, key, st.Ino, inos[i])
						return
					}
					raw, err := os.ReadFile(key + "/raw.bin")
					if err != nil || !bytes.Equal(raw, want(i)) {
						errs <- fmt.Errorf("round %d: read %s/raw.bin: %v, %x", round, key, err, raw)
						return
					}
					kids, err := os.ReadDir(key)
					if err != nil || len(kids) != 2 {
						errs <- fmt.Errorf("round %d: list %s: %v, %d entries", round, key, err, len(kids))
						return
					}
					npy, err := os.ReadFile(key + ".npy")
					if err != nil || !bytes.HasSuffix(npy, want(i)) {
						errs <- fmt.Errorf("round %d: read %s.npy: %v", round, key, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			break
		}
	}
	close(done)
	stop.Wait()
	checkDaemon(t, pid)
	if r := npzfs(t, "unmount", dir); r.code != 0 {
		t.Fatalf("unmount: exit %d: %s", r.code, r.stderr)
	}
}
