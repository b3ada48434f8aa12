package english

import "testing"

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n          int
		thing, out string
	}{
		{1, "request", "1 request"}, {0, "request", "0 requests"}, {2, "miss", "2 misses"},
		{3, "entry", "3 entries"}, {2, "day", "2 days"}, {4, "push", "4 pushes"}, {5, "box", "5 boxes"},
	} {
		if got := Plural(tc.n, tc.thing); got != tc.out {
			t.Errorf("Plural(%d, %q) = %q, want %q", tc.n, tc.thing, got, tc.out)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1023: "1023", 1024: "1.0K", 1536: "1.5K", 10 << 10: "10K", 234 << 20: "234M", 2 << 30: "2.0G", 1<<30 + 1: "1.1G"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{"/mnt/a-b_1.npz": "/mnt/a-b_1.npz", "": "''", "a b": "'a b'", "it's": `'it'\''s'`, "$HOME": "'$HOME'"} {
		if got := ShellWord(in); got != want {
			t.Errorf("ShellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
