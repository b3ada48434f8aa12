// Package english says counts of things in English, for messages.
package english

import (
	"fmt"
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
