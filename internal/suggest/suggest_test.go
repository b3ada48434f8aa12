package suggest

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"mount", "mount", 0}, {"mout", "mount", 1}, {"muont", "mount", 1},
		{"cache-mib", "cache-mb", 1}, {"", "ls", 2}, {"abc", "xyz", 3}, {"ca", "abc", 3},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := editDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.want)
		}
	}
}

// TestClosest: a slip of a letter or two (a tie goes to the first in
// sorted order), or the start of one candidate alone, finds it; a word
// far from every candidate, or the start of two, finds none.
func TestClosest(t *testing.T) {
	cands := []string{"mount", "unmount", "status", "index", "inspect"}
	for word, want := range map[string]string{
		"mout": "mount", "unmout": "unmount", "umount": "mount", "stauts": "status", "ind": "index",
		"in": "", "xyzzy": "", "": "", "inspect": "inspect",
	} {
		if got := Closest(word, cands); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
}
