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
		Root: "/", SuperOptions: "ro,user_id=0,group_id=0"}
	if got[1] != want {
		t.Errorf("got %+v, want %+v", got[1], want)
	}
	if got[0].FSType != "proc" || got[0].Dir != "/proc" || got[0].SuperOptions != "rw" {
		t.Errorf("got %+v", got[0])
	}
}
