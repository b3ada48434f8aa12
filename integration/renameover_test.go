//go:build linux

package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/testserver"
)

// TestFolderRenameOver: an archive of a folder mount renamed over by
// another of the same size and modification time (what cp -p, rsync -a,
// tar x and reproducible builds leave), while --max-open 1 has closed
// it, is another archive: every read of its members, stored and
// deflated, gives the old bytes, the new ones, or EIO, never a mix of old
// pages the kernel kept and new ones, however the kernel looks them up.
func TestFolderRenameOver(t *testing.T) {
	needNumpy(t)
	src := t.TempDir()
	gen := exec.Command(python, "-c", `import numpy as np, sys
d = sys.argv[1]
for name, v in (("old", 1.0), ("new", 2.0)):
    x = np.full((512, 1024), v, '<f4')
    np.savez(d + '/' + name + '-stored.npz', x=x)
    np.savez_compressed(d + '/' + name + '-deflated.npz', x=x)
np.savez(d + '/other.npz', y=np.arange(10))
`, src)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("writing the archives: %v: %s", err, out)
	}
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, kind := range []string{"stored", "deflated"} {
		for _, v := range []string{"old", "new"} {
			os.Chtimes(filepath.Join(src, v+"-"+kind+".npz"), stamp, stamp)
		}
		os.Rename(filepath.Join(src, "old-"+kind+".npz"), filepath.Join(src, kind+".npz"))
	}
	mnt := mount(t, src, "--max-open", "1")
	wantOld, wantNew := map[string][]byte{}, map[string][]byte{}
	for _, kind := range []string{"stored", "deflated"} {
		member := filepath.Join(mnt, kind+".npz", "x.npy")
		b, err := os.ReadFile(member)
		if err != nil {
			t.Fatal(err)
		}
		wantOld[kind] = b
		// The new archive's bytes, as a fresh mount serves them.
		nb, err := os.ReadFile(filepath.Join(mount(t, filepath.Join(src, "new-"+kind+".npz")), "x.npy"))
		if err != nil || bytes.Equal(nb, b) || len(nb) != len(b) {
			t.Fatalf("%s: the new archive's x.npy: %d bytes, %v (same as the old: %v)", kind, len(nb), err, bytes.Equal(nb, b))
		}
		wantNew[kind] = nb
	}
	// Another archive used: --max-open 1 closes the first ones.
	if _, err := os.ReadFile(filepath.Join(mnt, "other.npz", "y.npy")); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"stored", "deflated"} {
		if err := os.Rename(filepath.Join(src, "new-"+kind+".npz"), filepath.Join(src, kind+".npz")); err != nil {
			t.Fatal(err)
		}
	}
	// Read again and again, through whatever the kernel still keeps of
	// the old archive's names, until the new archive is served.
	for _, kind := range []string{"stored", "deflated"} {
		member := filepath.Join(mnt, kind+".npz", "x.npy")
		served := false
		eventually(t, kind+": the new archive served", func() bool {
			b, err := os.ReadFile(member)
			switch {
			case err != nil:
				return false // EIO, or gone while the kernel looks again
			case bytes.Equal(b, wantOld[kind]):
				return false
			case bytes.Equal(b, wantNew[kind]):
				served = true
				return true
			}
			t.Fatalf("%s: a read gave %d bytes that are neither the old archive's nor the new one's", kind, len(b))
			return false
		})
		if !served {
			continue
		}
		if b, err := os.ReadFile(member); err != nil || !bytes.Equal(b, wantNew[kind]) {
			t.Errorf("%s: read again after the new archive was served: %d bytes, %v", kind, len(b), err)
		}
	}
}

// renameShards is how many shards TestHTTPFolderRenameOver replaces,
// and renames how many times it replaces one in all.
const (
	renameShards = 4
	renames      = 300
)

// shardVersion is version v of shard i: a stored member x.npy and a
// deflated one y.npy, of noise of their own (so that a mix of two
// versions' bytes is neither) and of sizes of their own (so that an
// HTTP server's ETag, its modification time and size, tells them apart
// within a second).
func shardVersion(t *testing.T, i, v int) (zip []byte, x, y []byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(i), uint64(v)))
	noise := func(n int) []byte {
		b := make([]byte, n)
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		return b
	}
	xm := newArray(t, "x.npy", "|u1", []int64{int64(300<<10 + v*4096)}, noise(300<<10+v*4096), false)
	ym := newArray(t, "y.npy", "|u1", []int64{int64(200<<10 + v*4096)}, bytes.Repeat(noise(1000), 210+v*5)[:200<<10+v*4096], true)
	path := filepath.Join(t.TempDir(), "shard.npz")
	writeZip(t, path, []member{xm.member, ym.member})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, xm.data, ym.data
}

// TestHTTPFolderRenameOver: shards of an HTTP folder replaced again and
// again by atomic rename (a new file written beside, then renamed over
// the shard), as a writer publishing a dataset does, while readers look
// them up and read them: no lookup says a shard is not there, no
// listing leaves one out, and every read of a member gives the bytes of
// one version of it, old or new, or fails with EIO, never a mix; once
// the writer stops, every shard reads as its last version.
func TestHTTPFolderRenameOver(t *testing.T) {
	needFuse(t)
	www := t.TempDir()
	dir := filepath.Join(www, "ds")
	os.Mkdir(dir, 0o755)
	var versions [renameShards][2]version
	for i := range renameShards {
		for v := range 2 {
			z, x, y := shardVersion(t, i, v)
			versions[i][v] = version{z, x, y}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("shard%d.npz", i)), versions[i][0].zip, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ng := testserver.StartNginx(t, www, "autoindex on;", "autoindex_format json;")
	// Listed again every second, so that replaced shards are seen as
	// new within a second of their replacement, not after a minute.
	mnt := mount(t, ng.URL+"/ds/", "--list-ttl", "1s")

	var last [renameShards]atomic.Int32 // the version each shard holds
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := range renames {
			i := k % renameShards
			v := 1 - int(last[i].Load())
			path := filepath.Join(dir, fmt.Sprintf("shard%d.npz", i))
			if err := os.WriteFile(path+".tmp", versions[i][v].zip, 0o644); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(path+".tmp", path); err != nil {
				t.Error(err)
				return
			}
			last[i].Store(int32(v))
			time.Sleep(20 * time.Millisecond) // a writer's pace, not a timing
		}
	}()
	reads, eios, absent, wrong := readWhileRenamed(mnt, &versions, done)
	t.Logf("%d renames: %d reads of first versions, %d of second ones; %d listings and %d reads failed with EIO", renames, reads[0], reads[1], eios[0], eios[1])
	if n := absent; n > 0 {
		t.Errorf("%d reads of a shard said it was not there", n)
	}
	for _, w := range wrong {
		t.Error(w)
	}
	if reads[0] == 0 || reads[1] == 0 {
		t.Errorf("reads of first versions %d, of second ones %d: the readers did not see the shards replaced", reads[0], reads[1])
	}
	for i := range renameShards {
		want := versions[i][last[i].Load()]
		eventually(t, fmt.Sprintf("shard%d.npz's last version served", i), func() bool {
			x, errx := os.ReadFile(filepath.Join(mnt, fmt.Sprintf("shard%d.npz", i), "x.npy"))
			y, erry := os.ReadFile(filepath.Join(mnt, fmt.Sprintf("shard%d.npz", i), "y.npy"))
			return errx == nil && erry == nil && bytes.Equal(x, want.x) && bytes.Equal(y, want.y)
		})
	}
}

// version is a shard's archive, and its arrays x and y as np.load
// gives them.
type version struct{ zip, x, y []byte }

// readWhileRenamed lists mnt and reads the shards' x.npy and y.npy with
// four readers until done is closed, and counts what they found: reads
// of each version, listings and reads that failed with EIO, reads that
// said a shard was not there, and what else went wrong.
func readWhileRenamed(mnt string, versions *[renameShards][2]version, done <-chan struct{}) (reads, eios [2]int64, absent int64, wrong []string) {
	var nreads, neios [2]atomic.Int64 // old or new version read; listings, reads failed with EIO
	var nabsent atomic.Int64
	var mu sync.Mutex
	bad := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(wrong) < 20 {
			wrong = append(wrong, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-done:
					return
				default:
				}
				i := (r + k) % renameShards
				shard := filepath.Join(mnt, fmt.Sprintf("shard%d.npz", i))
				switch k % 3 {
				case 0:
					ents, err := os.ReadDir(mnt)
					switch {
					case failsForNow(err):
						neios[0].Add(1)
					case err != nil:
						bad("listing the folder: %v", err)
					case len(ents) != renameShards:
						bad("listing the folder: %v", entryNames(ents))
					}
				default:
					name, which := "x.npy", func(v version) []byte { return v.x }
					if k%3 == 2 {
						name, which = "y.npy", func(v version) []byte { return v.y }
					}
					b, err := os.ReadFile(filepath.Join(shard, name))
					switch {
					case errors.Is(err, fs.ErrNotExist):
						nabsent.Add(1)
					case failsForNow(err):
						neios[1].Add(1)
					case err != nil:
						bad("shard%d.npz/%s: %v", i, name, err)
					case bytes.Equal(b, which(versions[i][0])):
						nreads[0].Add(1)
					case bytes.Equal(b, which(versions[i][1])):
						nreads[1].Add(1)
					default:
						bad("shard%d.npz/%s: %d bytes that are neither version's", i, name, len(b))
					}
				}
			}
		})
	}
	wg.Wait()
	return [2]int64{nreads[0].Load(), nreads[1].Load()}, [2]int64{neios[0].Load(), neios[1].Load()}, nabsent.Load(), wrong
}
