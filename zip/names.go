package zip

import (
	"strings"
	"unicode/utf8"
)

// cp437High maps bytes 0x80..0xFF of IBM code page 437, the encoding APPNOTE
// prescribes for names without the UTF-8 flag (general-purpose bit 11), to
// Unicode. Python's zipfile, and so numpy's np.load, decodes such names the
// same way; bytes below 0x80 are ASCII.
var cp437High = []rune("ÇüéâäàåçêëèïîìÄÅ" +
	"ÉæÆôöòûùÿÖÜ¢£¥₧ƒ" +
	"áíóúñÑªº¿⌐¬½¼¡«»" +
	"░▒▓│┤╡╢╖╕╣║╗╝╜╛┐" +
	"└┴┬├─┼╞╟╚╔╩╦╠═╬╧" +
	"╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀" +
	"αßΓπΣσµτΦΘΩδ∞φε∩" +
	"≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0")

// DecodeName turns a raw central-directory name into a Go string. Valid
// UTF-8 is taken as it is, whatever the flag says (writers on Unix often
// omit the flag); invalid UTF-8 without the flag is decoded as CP437, as
// Python does, so the served name matches numpy's key; invalid UTF-8 with the
// flag set is refused (ok false).
func DecodeName(raw string, flags uint16) (name string, ok bool) {
	if utf8.ValidString(raw) {
		return raw, true
	}
	if flags&flagUTF8 != 0 {
		return raw, false
	}
	var b strings.Builder
	b.Grow(2 * len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c < 0x80 {
			b.WriteByte(c)
		} else {
			b.WriteRune(cp437High[c-0x80])
		}
	}
	return b.String(), true
}
