package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/npz"
)

// TestPack: pack writes OUT and prints one summary line; its flags reach
// the packer (a stored archive deflated in chunks); a member it cannot
// read fails it in one line, leaving no OUT; bad command lines are
// refused before anything is read.
func TestPack(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.npz")
	code, stdout, stderr := runCmd("pack", "--compress=deflate", "--chunk", "4096", corpusDir+"numpy_savez.npz", out)
	if code != exitOK || stderr != "" || !strings.HasPrefix(stdout, out+": 13 members (") || strings.Count(stdout, "\n") != 1 ||
		!strings.Contains(stdout, "deflated in SOZip chunks of 4.0K") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	a, err := npz.Open(context.Background(), out, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range a.Members() {
		if m.Method() != 8 && m.Name() != "objects.npy" {
			t.Errorf("%s: method %d", m.Name(), m.Method())
		}
	}
	a.Close()

	failed := filepath.Join(dir, "failed.npz")
	code, stdout, stderr = runCmd("pack", corpusDir+"methods.npz", failed)
	if code != exitFail || stdout != "" || stderr != "npzfs pack: member \"bzip2.npy\" uses compression method 12 (bzip2), which npzfs cannot read\n" {
		t.Errorf("unreadable member: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Stat(failed); err == nil {
		t.Error("a failed run left OUT")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pack", "a.npz"}, "needs IN and OUT"},
		{[]string{"pack", "--compress", "zstd", "a.npz", "b.npz"}, `--compress: compression "zstd": give keep, none, deflate or auto`},
		{[]string{"pack", "--chunk", "100", "a.npz", "b.npz"}, "--chunk 100: give 4096 to 67108864 bytes"},
		{[]string{"pack", "a.npz", "s3://bucket/b.npz"}, "OUT is a local file"},
	} {
		code, stdout, stderr := runCmd(tc.args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}
