package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/npzfs/npzfs/memplan"
)

// TestServeRefusals: serve says in one line what is wrong with its
// command line (exit 2) or its archive (exit 1), before reading a
// request.
func TestServeRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"serve", corpusDir + "numpy_savez.npz"}, exitUsage, "give --stdio"},
		{[]string{"serve", "--stdio"}, exitUsage, "needs ARCHIVE"},
		{[]string{"serve", "--stdio", "a.npz", "b.npz"}, exitUsage, `unexpected argument "b.npz"`},
		{[]string{"serve", "--stdio", "--cache-mb", "0", "a.npz"}, exitUsage, "--cache-mb must be at least 1"},
		{[]string{"serve", "--stdio", "--memory-mb", "99999999999999", "a.npz"}, exitUsage,
			fmt.Sprintf("--memory-mb 99999999999999 is more than this machine's memory: give at most %d", memplan.MaxBudget()>>20)},
		{[]string{"serve", "--stdio", "--max-header-kb", "99999999999", "a.npz"}, exitUsage, "give at most 4194304"},
		{[]string{"serve", "--stdio", "--header", "nocolon", "https://h/a.npz"}, exitUsage, "--header"},
		{[]string{"serve", "--stdio", "--no-index", dir + "/missing.npz"}, exitFail, "does not exist"},
		{[]string{"serve", "--stdio", "--no-index", dir}, exitFail, "is a folder"},
		{[]string{"serve", "--stdio", "--no-index", "ftp://h/a.npz"}, exitFail, "unknown URL scheme"},
	} {
		code, out, errs := runCmd(tc.args...)
		if code != tc.code || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.mention) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d mentioning %q", tc.args, code, out, errs, tc.code, tc.mention)
		}
	}
}
