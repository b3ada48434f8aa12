package remote

import (
	"fmt"
	"testing"
)

// TestRunsOf: ascending block numbers grouped into runs of adjacent ones,
// each a subslice of its input, of numbers or of anything holding one.
func TestRunsOf(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want string
	}{
		{nil, "[]"},
		{[]int64{7}, "[[7]]"},
		{[]int64{1, 2, 3}, "[[1 2 3]]"},
		{[]int64{1, 3, 4, 6, 7, 8, 10}, "[[1] [3 4] [6 7 8] [10]]"},
	} {
		if got := fmt.Sprint(sortedRuns(tc.in)); got != tc.want {
			t.Errorf("sortedRuns(%v) = %s, want %s", tc.in, got, tc.want)
		}
		bs := make([]*block, len(tc.in))
		for i, idx := range tc.in {
			bs[i] = &block{idx: idx}
		}
		var got [][]int64
		for _, run := range runsOf(bs, func(b *block) int64 { return b.idx }) {
			var r []int64
			for _, b := range run {
				r = append(r, b.idx)
			}
			got = append(got, r)
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("runsOf blocks %v = %v, want %s", tc.in, got, tc.want)
		}
	}
}
