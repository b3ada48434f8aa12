// Package suggest finds what a mistyped word was probably meant to be:
// the command line's "did you mean" for commands and flags.
package suggest

import "strings"

// Closest returns the candidate nearest to word, if one is near enough to
// be a slip for it: a few letters typed wrong, missing, extra or swapped
// (at most a third of the word, and at least one), or the start of exactly
// one candidate. Ties go to the first candidate in sorted order.
func Closest(word string, candidates []string) string {
	best, bestDist := "", -1
	limit := max(1, len(word)/3)
	var prefixed []string
	for _, c := range candidates {
		if len(word) >= 2 && strings.HasPrefix(c, word) {
			prefixed = append(prefixed, c)
		}
		d := editDistance(word, c)
		if d > limit {
			continue
		}
		if bestDist < 0 || d < bestDist || d == bestDist && c < best {
			best, bestDist = c, d
		}
	}
	if best == "" && len(prefixed) == 1 {
		return prefixed[0]
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b,
// in bytes: insertions, deletions, substitutions and swaps of two
// neighbours each count one.
func editDistance(a, b string) int {
	// Three rows of the table: i-2, i-1 and i.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
