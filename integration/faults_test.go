//go:build linux

package integration

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npzfs/npzfs/internal/faultproxy"
	"github.com/npzfs/npzfs/internal/pagecache"
	"github.com/npzfs/npzfs/internal/testserver"
)

// faultsFor is how long TestInjectedFaults spoils answers: the issue's
// figure, a minute, for both mounts at once.
const faultsFor = 60 * time.Second

// faultKinds are the faults TestInjectedFaults injects, each into 3% of
// the requests: every way a server or a network fails that may pass.
var faultKinds = []faultproxy.Fault{
	faultproxy.Status500, faultproxy.SlowDown, faultproxy.Drop, faultproxy.Reset, faultproxy.Truncate,
	faultproxy.Whole200, faultproxy.BadTotal, faultproxy.Trickle, faultproxy.Silent,
}

// readersPerMount is how many readers TestInjectedFaults runs on each
// mount.
const readersPerMount = 3

// soak is one mount under injected faults, with what it served before
// them: every file's bytes and every folder's names.
type soak struct {
	name  string
	mnt   string
	log   string // the daemon's
	proxy *faultproxy.Proxy
	files map[string][]byte   // by path in the mount
	dirs  map[string][]string // names listed, by path in the mount
	paths []string            // of files, sorted
	dirps []string            // of folders, sorted

	ops, failed atomic.Int64     // operations done, and those that failed with EIO
	injected    [16]atomic.Int64 // answers spoiled, by fault

	mu  sync.Mutex
	bad []string // what went wrong: not EIO, not the bytes or names served before
}

// newSoak walks mnt, with no fault yet, and keeps what it serves.
func newSoak(t *testing.T, name, mnt string, p *faultproxy.Proxy) *soak {
	t.Helper()
	s := &soak{name: name, mnt: mnt, proxy: p, files: map[string][]byte{}, dirs: map[string][]string{}}
	err := filepath.WalkDir(mnt, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mnt, path)
		if d.IsDir() {
			ents, err := os.ReadDir(path)
			if err != nil {
				return err
			}
			s.dirs[rel] = entryNames(ents)
			s.dirps = append(s.dirps, rel)
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s.files[rel] = b
		s.paths = append(s.paths, rel)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: walking the mount before the faults: %v", name, err)
	}
	return s
}

func entryNames(ents []os.DirEntry) []string {
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name()
	}
	return out
}

// wrong records what a reader found wrong.
func (s *soak) wrong(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bad = append(s.bad, fmt.Sprintf(format, args...))
}

// check counts an operation's error: none, EIO (a failure that may
// pass, which is allowed), or anything else, which is wrong.
func (s *soak) check(what, rel string, err error) bool {
	s.ops.Add(1)
	switch {
	case err == nil:
		return true
	case failsForNow(err):
		s.failed.Add(1)
	default:
		s.wrong("%s %s: %v", what, rel, err)
	}
	return false
}

// read reads a file the mount served before, past the page cache, whole
// or (a large one) 64 KiB at a random place, and checks the bytes.
func (s *soak) read(rel string, rng *rand.Rand) {
	f, err := os.Open(filepath.Join(s.mnt, rel))
	if !s.check("open", rel, err) {
		return
	}
	defer f.Close()
	pagecache.Drop(f)
	want := s.files[rel]
	off := int64(0)
	if len(want) > 256<<10 {
		off = rng.Int64N(int64(len(want)) - 64<<10)
		want = want[off : off+64<<10]
	}
	got := make([]byte, len(want))
	n, err := f.ReadAt(got, off)
	if n < len(want) && !s.check("read", rel, err) {
		return
	}
	s.ops.Add(1)
	if !bytes.Equal(got[:n], want) {
		s.wrong("read %s at %d: %d bytes that are not the ones served before the faults", rel, off, n)
	}
}

// list lists a folder the mount served before and checks its names.
func (s *soak) list(rel string) {
	ents, err := os.ReadDir(filepath.Join(s.mnt, rel))
	if !s.check("list", rel, err) {
		return
	}
	if got := entryNames(ents); !slices.Equal(got, s.dirs[rel]) {
		s.wrong("list %s: %d names %v, before the faults %d %v", rel, len(got), got, len(s.dirs[rel]), s.dirs[rel])
	}
}

// reader reads, lists and looks up what the mount served before until
// stop is closed.
func (s *soak) reader(seed uint64, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(seed, 37))
	for {
		select {
		case <-stop:
			return
		default:
		}
		// A pause, so that readers of what the daemon holds in memory
		// leave the machine's cores to the others.
		time.Sleep(2 * time.Millisecond)
		switch rng.IntN(4) {
		case 0:
			s.list(s.dirps[rng.IntN(len(s.dirps))])
		case 1:
			rel := s.dirps[rng.IntN(len(s.dirps))]
			if rng.IntN(2) == 0 {
				rel = s.paths[rng.IntN(len(s.paths))]
			}
			_, err := os.Stat(filepath.Join(s.mnt, rel))
			s.check("stat", rel, err)
		default:
			s.read(s.paths[rng.IntN(len(s.paths))], rng)
		}
	}
}

// report says what the readers found wrong, and how much they did.
func (s *soak) report(t *testing.T) {
	t.Helper()
	var kinds []string
	for _, f := range faultKinds {
		n := s.injected[f].Load()
		kinds = append(kinds, fmt.Sprintf("%d %s", n, f))
		if n == 0 {
			t.Errorf("%s: no answer was spoiled with %s", s.name, f)
		}
	}
	t.Logf("%s: %d operations, %d failed with EIO; the proxy spoiled %d of %d requests: %s", s.name, s.ops.Load(), s.failed.Load(), s.proxy.Faults(), s.proxy.Requests(), strings.Join(kinds, ", "))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, b := range s.bad {
		if i == 20 {
			t.Errorf("%s: %d more", s.name, len(s.bad)-i)
			break
		}
		t.Errorf("%s: %s", s.name, b)
	}
}

// settled reports whether the mount serves again every name and every
// byte it served before the faults.
func (s *soak) settled() bool {
	for _, rel := range s.dirps {
		ents, err := os.ReadDir(filepath.Join(s.mnt, rel))
		if err != nil || !slices.Equal(entryNames(ents), s.dirs[rel]) {
			return false
		}
	}
	for _, rel := range s.paths {
		got, err := os.ReadFile(filepath.Join(s.mnt, rel))
		if err != nil || !bytes.Equal(got, s.files[rel]) {
			return false
		}
	}
	return true
}

// faultShards is the folder TestInjectedFaults serves: 16 shards of
// shardFolder's, and two larger archives (a stored and a deflated member
// of 2 MiB and 4 MiB) whose reads fetch blocks after the archives are
// open.
func faultShards(t *testing.T) string {
	t.Helper()
	src := shardFolder(t, 16)
	writeZip(t, filepath.Join(src, "large0.npz"), []member{newArray(t, "a.npy", "<f4", []int64{1 << 19}, f32s(1<<19), false).member})
	writeZip(t, filepath.Join(src, "part2", "large1.npz"), []member{newArray(t, "b.npy", "<i8", []int64{1 << 19}, i64s(1<<19), true).member})
	return src
}

// TestInjectedFaults: for a minute, 3% of the requests to an S3 prefix
// and to an HTTP folder meet each kind of fault that may pass (a 5xx, a
// dropped or reset connection, a truncated body, a 200 to a range, a
// Content-Range total off by one, a trickle, silence), while readers
// list, look up and read the mounts of both: no read gives bytes other
// than those served before the faults, no lookup says that a file is
// not there and no listing leaves a name out (EIO is what fails); once
// the faults stop, every name is listed and every byte is right again,
// without a remount. The S3 mount keeps four archives open, so that
// they are opened again and again; the HTTP one keeps all, with a block
// cache of 1 MiB, so that the large archives' blocks are fetched again
// and again while they are open.
func TestInjectedFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of faults (-short)")
	}
	needFuse(t)
	src := faultShards(t)
	local := mount(t, src)

	s3 := testserver.StartS3(t)
	s3Env(t, s3)
	s3.Bucket(t, "soak")
	putFolder(t, s3, "soak", "ds/", src)
	ng := testserver.StartNginx(t, filepath.Dir(src), "autoindex on;", "autoindex_format json;")
	var soaks []*soak
	for _, m := range []struct{ name, upstream, url string }{
		{"s3", s3.Endpoint, "s3://soak/ds/"},
		{"http", ng.URL, ""},
	} {
		p, err := faultproxy.Start(m.upstream, faultproxy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		// Short bounds, so that a request spoiled gives up soon.
		log := filepath.Join(t.TempDir(), "npzfs.log")
		flags := []string{"--remote-timeout", "5s", "--stall-timeout", "1s", "--list-ttl", "1s", "--log", log}
		url := m.url
		if url == "" {
			url = p.URL + "/" + filepath.Base(src) + "/"
			flags = append(flags, "--remote-cache-mb", "1")
		} else {
			flags = append(flags, "--endpoint", p.URL, "--max-open", "4")
		}
		mnt := mount(t, url, flags...)
		if n := checkSame(t, src, mnt); n != 16*2+1+2 {
			t.Fatalf("%s: compared %d files before the faults, want %d", m.name, n, 16*2+1+2)
		}
		s := newSoak(t, m.name, mnt, p)
		s.log = log
		// The same tree as a mount of the local folder.
		if l := newSoak(t, "local", local, p); !slices.Equal(l.paths, s.paths) || !slices.Equal(l.dirps, s.dirps) {
			t.Fatalf("%s: the mount holds %d files in %d folders, the local one %d in %d", m.name, len(s.paths), len(s.dirps), len(l.paths), len(l.dirps))
		}
		soaks = append(soaks, s)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range soaks {
		choose := faultproxy.Sprinkle(30, faultKinds...)
		s.proxy.SetFaults(func(n int64, r *http.Request) faultproxy.Fault {
			f := choose(n, r)
			s.injected[f].Add(1)
			return f
		})
		for r := range readersPerMount {
			wg.Go(func() { s.reader(uint64(i*readersPerMount+r), stop) })
		}
	}
	time.Sleep(faultsFor)
	close(stop)
	wg.Wait()
	for _, s := range soaks {
		s.proxy.SetFaults(nil)
	}
	for _, s := range soaks {
		s.report(t)
		eventually(t, s.name+": every name listed and every byte right after the faults", s.settled)
	}
	if t.Failed() {
		for _, s := range soaks {
			logTail(t, s.log)
		}
	}
}

// logTail logs the last lines of a daemon's log.
func logTail(t *testing.T, log string) {
	t.Helper()
	b, _ := os.ReadFile(log)
	lines := strings.Split(string(b), "\n")
	t.Logf("%s ends:\n%s", log, strings.Join(lines[max(len(lines)-60, 0):], "\n"))
}
