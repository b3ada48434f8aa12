//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/internal/daemon"
	"github.com/npzfs/npzfs/memplan"
)

func TestMountCommandLine(t *testing.T) {
	dir := t.TempDir()
	mostMiB := strconv.FormatInt(memplan.MaxBudget()>>20, 10)
	for _, c := range []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"mount"}, exitUsage, "needs ARCHIVE and MOUNTPOINT"},
		{[]string{"mount", "a.npz"}, exitUsage, "needs ARCHIVE and MOUNTPOINT"},
		{[]string{"mount", "a.npz", dir, "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"mount", "-o", "ro,rw", "a.npz", dir}, exitUsage, `"rw" is refused`},
		{[]string{"mount", "-o", "allow_other", "-o", "suid,bogus", "a.npz", dir}, exitUsage, `unsupported mount option "bogus"`},
		{[]string{"mount", "--cache-mb", "0", "a.npz", dir}, exitUsage, "--cache-mb"},
		{[]string{"mount", "--readahead-kb", "-1", "a.npz", dir}, exitUsage, "--readahead-kb"},
		// A size past what it could bound, or past what an int64 of
		// bytes holds, is refused with the most the flag takes (no
		// default silently in its place).
		{[]string{"mount", "--memory-mb", "99999999999999", "a.npz", dir}, exitUsage, "--memory-mb 99999999999999 is more than this machine's memory: give at most " + mostMiB},
		{[]string{"mount", "-o", "cache_mb=99999999999", "a.npz", dir}, exitUsage, "--cache-mb 99999999999 is more than this machine's memory: give at most " + mostMiB},
		{[]string{"mount", "--index-mb", "99999999999999999999", "a.npz", dir}, exitUsage, "--index-mb 99999999999999999999: too large: give at most " + mostMiB},
		{[]string{"mount", "--cache-mb", mostMiB, "--index-mb", mostMiB, "a.npz", dir}, exitUsage, "the budgets given add up to more than this machine's memory"},
		{[]string{"mount", "--remote-cache-mb", "99999999999999", "a.npz", dir}, exitUsage, "--remote-cache-mb 99999999999999 is more than"},
		{[]string{"mount", "--disk-cache-mb", "8796093022208", "a.npz", dir}, exitUsage, "--disk-cache-mb 8796093022208 is more than the largest size npzfs counts: give at most 8796093022207"},
		{[]string{"mount", "--index-cache-mb", "8796093022208", "a.npz", dir}, exitUsage, "give at most 8796093022207"},
		{[]string{"mount", "--max-header-kb", "9007199254740992", "a.npz", dir}, exitUsage, "--max-header-kb 9007199254740992 is more than a .npy header can be (4 GiB): give at most 4194304"},
		{[]string{"mount", "--help"}, exitOK, "Exit codes"},
		{[]string{"unmount"}, exitUsage, "needs MOUNTPOINT"},
		{[]string{"umount", "--help"}, exitOK, "Exit codes"},
		{[]string{"unmount", dir}, exitFail, "is not mounted"},
		{[]string{"unmount", dir + "/nowhere"}, exitFail, dir + "/nowhere does not exist"},
		// Checks made before anything is mounted, in the foreground.
		{[]string{"mount", "-f", dir + "/missing.npz", dir}, exitFail, "does not exist"},
		{[]string{"mount", "-f", dir, dir}, exitFail, "the mount point is inside the folder"},
		{[]string{"mount", "-f", filepath.Dir(dir), dir}, exitFail, "the mount point is inside the folder"},
		{[]string{"mount", "-f", dir, dir + "/nowhere"}, exitFail, "mkdir -p"},
		{[]string{"mount", "-f", dir + "/missing.npz", "/proc/self"}, exitFail, fmt.Sprintf("cannot mount on /proc/%d: it is in proc", os.Getpid())},
		{[]string{"mount", "-f", "--log", dir + "/nofolder/log", dir + "/missing.npz", dir}, exitFail, "cannot open the log file"},
		// Flags as mount options (fstab style); a flag given as a flag wins.
		{[]string{"mount", "-f", "-o", "ro,cache_mb=8,index-mb=4,debug", dir + "/missing.npz", dir}, exitFail, "does not exist"},
		{[]string{"mount", "-f", "--cache-mb", "4", "-o", "cache_mb=0", dir + "/missing.npz", dir}, exitFail, "does not exist"},
		{[]string{"mount", "-o", "cache_mb", "a.npz", dir}, exitUsage, "needs a value: cache_mb=VALUE"},
		{[]string{"mount", "-o", "cache_mb=lots", "a.npz", dir}, exitUsage, "cache_mb=lots"},
		{[]string{"mount", "-o", "cache_mb=0", "a.npz", dir}, exitUsage, "--cache-mb must be at least 1"},
		{[]string{"mount", "-o", "foreground", "a.npz", dir}, exitUsage, `unsupported mount option "foreground"`},
		{[]string{"mount", "-o", "ready_fd=3", "a.npz", dir}, exitUsage, `unsupported mount option "ready_fd=3"`},
		// A slip in an option's name, as in a flag's, is told its near one.
		{[]string{"mount", "-o", "cahce_mb=1", "a.npz", dir}, exitUsage, `unsupported mount option "cahce_mb=1"; did you mean cache_mb?`},
		{[]string{"mount", "-o", "allow_othr", "a.npz", dir}, exitUsage, `unsupported mount option "allow_othr"; did you mean allow_other?`},
		{[]string{"mount", "-o", "nosiud", "a.npz", dir}, exitUsage, `did you mean nosuid?`},
		// mount(8)'s call through mount.fuse3 (its own options are
		// taken: TestHelperArgs, and the integration tests).
		{[]string{dir + "/missing.npz", dir, "-o", "rw,bogus"}, exitUsage, `unsupported mount option "bogus"`},
		{[]string{"a.npz", dir}, exitUsage, `unknown command "a.npz"`},
		{[]string{"ls", dir, "-o", "ro"}, exitUsage, "unknown shorthand flag"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(c.args, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code != c.code || !strings.Contains(out, c.mention) {
			t.Errorf("npzfs %q: exit %d, want %d; output lacks %q:\n%s", c.args, code, c.code, c.mention, out)
		}
		if code == exitFail && strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("npzfs %q: failure is not one line: %q", c.args, stderr.String())
		}
	}
}

// TestHelperArgs: mount(8)'s call through mount.fuse3 becomes npzfs mount
// without the options that only mean something to mount(8) itself.
func TestHelperArgs(t *testing.T) {
	for _, c := range []struct {
		args   []string
		helper bool
		want   []string
	}{
		{[]string{"a.npz", "/mnt", "-o", "rw,dev,suid"}, true, []string{"a.npz", "/mnt"}},
		{[]string{"a.npz", "/mnt", "-o", "rw,dev,suid,noexec"}, true, []string{"a.npz", "/mnt", "-o", "noexec"}},
		{[]string{"a.npz", "/mnt", "-o", "ro,noauto,user,_netdev,nofail,sync,x-systemd.automount,comment=x,user=nobody,cache_mb=8,allow_other"}, true,
			[]string{"a.npz", "/mnt", "-o", "ro,cache_mb=8,allow_other"}},
		{[]string{"a.npz", "/mnt", "-o", "rw,defaults"}, true, []string{"a.npz", "/mnt"}},
		{[]string{"a.npz", "/mnt"}, false, nil},
		{[]string{"mount", "/mnt", "-o", "ro"}, false, nil},
		{[]string{"-f", "/mnt", "-o", "ro"}, false, nil},
		{[]string{"a.npz", "/mnt", "-x", "ro"}, false, nil},
	} {
		if got := isHelperCall(c.args); got != c.helper {
			t.Errorf("isHelperCall(%q) = %v", c.args, got)
			continue
		}
		if c.helper {
			if got := helperMountArgs(c.args); !slices.Equal(got, c.want) {
				t.Errorf("helperMountArgs(%q) = %q, want %q", c.args, got, c.want)
			}
		}
	}
}

// TestMountWarnings: a large deflated member without a saved index gets
// its note, naming the index folder when it is not the default one, and
// a mount point that held entries its warning.
func TestMountWarnings(t *testing.T) {
	st := mountStatus{Ready: daemon.Ready{Source: "/data/a.npz", Mountpoint: "/mnt/a", Members: 3, Unreadable: 1, Hidden: 2,
		Unindexed: 1, UnindexedBytes: 3 << 30}}
	w := strings.Join(st.warnings(), "\n")
	for _, want := range []string{"a deflated member of 3.0 GiB has no saved index", "npzfs index /data/a.npz", "--index", "(2 entries)", "1 of 3 members cannot be served or read"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	st.indexDir, st.Source, st.Hidden = "/my indexes", "/data/b.npz", 1
	w = strings.Join(st.warnings(), "\n")
	for _, want := range []string{"npzfs index --index-dir '/my indexes' /data/b.npz", "(1 entry)"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
}

// TestShownOptions: npzfs status shows every mount flag given a value
// other than its default, and nothing (an empty list) for a plain mount.
func TestShownOptions(t *testing.T) {
	parse := func(args ...string) *mountArgs {
		fl := newFlags("mount", io.Discard, io.Discard)
		var ma mountArgs
		var opts []string
		ma.addFlags(fl, &opts)
		if err := fl.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := ma.index.check(); err != nil {
			t.Fatal(err)
		}
		ma.options = opts
		return &ma
	}
	if got := parse().shownOptions(); got == nil || len(got) != 0 {
		t.Errorf("a plain mount shows %#v, want an empty list", got)
	}
	got := strings.Join(parse("--debug", "--readahead-kb", "64", "--disk-cache-mb", "5", "--index-cache-mb", "7", "--max-open", "3", "-o", "noatime").shownOptions(), " ")
	want := "--debug --max-open=3 --readahead-kb=64 --disk-cache-mb=5 --index-cache-mb=7 -o noatime"
	if got != want {
		t.Errorf("shown options %q, want %q", got, want)
	}
}

// TestLogFileAbsolute: --log is named absolute from the caller's folder
// before the daemon serves from /, so that status shows where it is.
func TestLogFileAbsolute(t *testing.T) {
	fl := newFlags("mount", io.Discard, io.Discard)
	var ma mountArgs
	var opts []string
	ma.addFlags(fl, &opts)
	if err := fl.Parse([]string{"--log", "run/npzfs.log", "--no-index"}); err != nil {
		t.Fatal(err)
	}
	if err := ma.check(fl); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if want := filepath.Join(wd, "run", "npzfs.log"); ma.life.logFile != want {
		t.Errorf("--log run/npzfs.log is %q, want %q", ma.life.logFile, want)
	}
}

// TestDaemonHeadersFromEnvironment: the daemon takes the headers npzfs
// mount passes in NPZFS_HEADERS, and does not take them twice.
func TestDaemonHeadersFromEnvironment(t *testing.T) {
	t.Setenv(headerEnv, "Authorization: Bearer x\nX-Team: a")
	ma := mountArgs{archive: "https://h/x.npz", remote: remoteFlags{diskCacheMB: 1}}
	if err := ma.remote.check(); err != nil {
		t.Fatal(err)
	}
	fromDaemonEnv(&ma)
	if len(ma.remote.headers) != 2 {
		t.Errorf("the daemon's headers: %q", ma.remote.headers)
	}
}
