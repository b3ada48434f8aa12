package remote

import "testing"

func TestParseContentRange(t *testing.T) {
	for in, want := range map[string][3]int64{
		"bytes 0-99/1000":   {0, 99, 1000},
		"bytes 10-19/*":     {10, 19, -1},
		"bytes */0":         {-1, -1, 0},
		"bytes 5-4/10":      {},
		"bytes 0-10/10":     {},
		"items 0-1/2":       {},
		"bytes 0-1":         {},
		"bytes -1-5/10":     {},
		"bytes 1-2/-3":      {},
		"bytes 99999999999": {},
	} {
		a, b, c, err := ParseContentRange(in)
		if (want == [3]int64{}) != (err != nil) || (err == nil && [3]int64{a, b, c} != want) {
			t.Errorf("%q: %d %d %d %v", in, a, b, c, err)
		}
	}
}
