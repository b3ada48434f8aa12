//go:build linux

package fs

import (
	"slices"
	"syscall"
	"testing"
)

func TestHasCap(t *testing.T) {
	status := []byte("Name:\tnpzfs\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffdfffff\nCapAmb:\t0000000000000000\n")
	for _, tc := range []struct {
		field string
		bit   uint
		want  bool
	}{
		{"CapEff", capSysAdmin, true},
		{"CapBnd", capSysAdmin, false}, // bit 21 cleared: ...dfffff
		{"CapBnd", capSysAdmin + 1, true},
		{"CapInh", capSysAdmin, false},
		{"CapXyz", 0, false},
		{"Cap", 0, false}, // a prefix of a field is not a field
	} {
		if got := hasCap(status, tc.field, tc.bit); got != tc.want {
			t.Errorf("hasCap(%s, %d) = %v, want %v", tc.field, tc.bit, got, tc.want)
		}
	}
}

func TestMountFlags(t *testing.T) {
	const base = syscall.MS_NOSUID | syscall.MS_NODEV
	for _, tc := range []struct {
		opts  []string
		flags uintptr
		rest  []string
	}{
		{[]string{"ro"}, base | syscall.MS_RDONLY, nil},
		{[]string{"ro", "noatime", "allow_other"}, base | syscall.MS_RDONLY | syscall.MS_NOATIME, []string{"allow_other"}},
		{[]string{"ro", "noatime", "atime", "default_permissions", "dev"}, syscall.MS_NOSUID | syscall.MS_RDONLY, []string{"default_permissions"}},
		{[]string{"ro", "suid", "noexec"}, syscall.MS_NODEV | syscall.MS_RDONLY | syscall.MS_NOEXEC, nil},
		{[]string{"ro", "exec", "nosuid"}, base | syscall.MS_RDONLY, nil},
	} {
		flags, rest := mountFlags(tc.opts)
		if flags != tc.flags || !slices.Equal(rest, tc.rest) {
			t.Errorf("mountFlags(%q) = %#x, %q; want %#x, %q", tc.opts, flags, rest, tc.flags, tc.rest)
		}
	}
}
