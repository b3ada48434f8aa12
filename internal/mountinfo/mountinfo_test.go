package mountinfo

import "testing"

func TestParse(t *testing.T) {
	text := `22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
101 22 0:52 / /mnt/a\040b ro,nosuid,nodev,relatime shared:60 master:1 - fuse.npzfs /data/x\040y.npz ro,user_id=0,group_id=0
short line
`
	got := Parse(text)
	if len(got) != 2 {
		t.Fatalf("parsed %d entries, want 2: %+v", len(got), got)
	}
	want := Entry{Dir: "/mnt/a b", Options: "ro,nosuid,nodev,relatime", FSType: "fuse.npzfs", Source: "/data/x y.npz", Dev: "0:52",
		Root: "/", Super: "ro,user_id=0,group_id=0"}
	if got[1] != want {
		t.Errorf("got %+v, want %+v", got[1], want)
	}
	if got[0].FSType != "proc" || got[0].Dir != "/proc" || got[0].Super != "rw" {
		t.Errorf("got %+v", got[0])
	}
}

func TestOption(t *testing.T) {
	for _, tc := range []struct {
		opts, name, value string
		ok                bool
	}{
		{"ro,user_id=1000,group_id=100", "user_id", "1000", true},
		{"ro,user_id=1000,group_id=100", "ro", "", true},
		{"ro,user_id=1000", "group_id", "", false},
		{"", "user_id", "", false},
	} {
		v, ok := Option(tc.opts, tc.name)
		if v != tc.value || ok != tc.ok {
			t.Errorf("Option(%q, %q) = %q, %v; want %q, %v", tc.opts, tc.name, v, ok, tc.value, tc.ok)
		}
	}
}
