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
