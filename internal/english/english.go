// Package english says counts of things and sizes in English, for messages.
package english

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Plural is "1 thing" or "n things" (a thing ending in s, x, ch or sh
// takes "es", in a consonant and y "ies": "2 misses", "3 entries").
func Plural[N ~int | ~int64](n N, thing string) string {
	switch {
	case n == 1:
		return "1 " + thing
	case strings.HasSuffix(thing, "s") || strings.HasSuffix(thing, "x") || strings.HasSuffix(thing, "ch") || strings.HasSuffix(thing, "sh"):
		thing += "es"
	case strings.HasSuffix(thing, "y") && len(thing) > 1 && !strings.ContainsRune("aeiou", rune(thing[len(thing)-2])):
		thing = thing[:len(thing)-1] + "ies"
	default:
		thing += "s"
	}
	return fmt.Sprintf("%d %s", n, thing)
}

// Size is n bytes as ls -h shows it: 512, 1.5K, 10K, 234M, 2.0G
// (powers of 1024; one decimal below 10).
func Size(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	v := float64(n)
	unit := 0
	for v >= 1024 && unit < 6 {
		v /= 1024
		unit++
	}
	suffix := string("KMGTPE"[unit-1])
	if v < 10 {
		return strconv.FormatFloat(math.Ceil(v*10)/10, 'f', 1, 64) + suffix
	}
	return strconv.FormatFloat(math.Ceil(v), 'f', 0, 64) + suffix
}

// ShellWord is s as one word of a shell command line: as it is when it
// holds nothing a shell would read otherwise, else in single quotes.
func ShellWord(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+:@%=,", c)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	if s == "" {
		return "''"
	}
	return s
}
