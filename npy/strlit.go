package npy

import (
	"strings"
	"unicode/utf8"
)

// strings parses one string literal, or several adjacent ones, which Python
// concatenates.
func (p *literalParser) strings() (Value, error) {
	var b strings.Builder
	first := true
	for {
		if !first {
			save := p.pos
			if err := p.skipSpace(); err != nil {
				return nil, err
			}
			if !p.atStringStart() {
				p.pos = save
				if err := p.skipSpace(); err != nil {
					return nil, err
				}
				return b.String(), nil
			}
		}
		first = false
		if err := p.oneString(&b); err != nil {
			return nil, err
		}
		if b.Len() > len(p.src)*4 {
			return nil, p.errAt(p.pos, "string too long")
		}
	}
}

func (p *literalParser) atStringStart() bool {
	i := p.pos
	if i < len(p.src) {
		switch p.src[i] {
		case 'u', 'U', 'r', 'R':
			i++
		}
	}
	return i < len(p.src) && (p.src[i] == '\'' || p.src[i] == '"')
}

// nextChar decodes one character of string content at i.
func (p *literalParser) nextChar(i int) (rune, int) {
	c := p.src[i]
	if c < 0x80 || !p.utf8 {
		return rune(c), 1 // latin-1: every byte is one character
	}
	return utf8.DecodeRune(p.src[i:])
}

func (p *literalParser) oneString(b *strings.Builder) error {
	start := p.pos
	raw := false
	switch p.src[p.pos] {
	case 'r', 'R':
		raw = true
		p.pos++
	case 'u', 'U':
		p.pos++
	}
	q := p.src[p.pos]
	triple := p.pos+2 < len(p.src) && p.src[p.pos+1] == q && p.src[p.pos+2] == q
	if triple {
		p.pos += 3
	} else {
		p.pos++
	}
	src := p.src
	if !triple {
		// Fast path: a plain run of characters up to the closing quote.
		i := p.pos
		for i < len(src) && src[i] != q && src[i] != '\\' && src[i] != '\n' && src[i] != '\r' && (src[i] < 0x80 || p.utf8) {
			i++
		}
		if i < len(src) && src[i] == q {
			b.Write(src[p.pos:i])
			p.pos = i + 1
			return nil
		}
	}
	for {
		if p.pos >= len(src) {
			return p.errAt(start, "unterminated string literal")
		}
		c := src[p.pos]
		if c == q {
			if !triple {
				p.pos++
				return nil
			}
			if p.pos+2 < len(src) && src[p.pos+1] == q && src[p.pos+2] == q {
				p.pos += 3
				return nil
			}
		}
		if (c == '\n' || c == '\r') && !triple {
			return p.errAt(start, "unterminated string literal")
		}
		if c == '\\' {
			if p.pos+1 >= len(src) {
				return p.errAt(start, "unterminated string literal")
			}
			if raw {
				// A backslash keeps the next character, both stay.
				b.WriteByte('\\')
				p.pos++
				r, n := p.nextChar(p.pos)
				b.WriteRune(r)
				p.pos += n
				continue
			}
			if err := p.escape(b); err != nil {
				return err
			}
			continue
		}
		if c == '\r' {
			// Python reads "\r\n" and "\r" in source as "\n".
			b.WriteByte('\n')
			p.pos++
			if p.pos < len(src) && src[p.pos] == '\n' {
				p.pos++
			}
			continue
		}
		r, n := p.nextChar(p.pos)
		b.WriteRune(r)
		p.pos += n
	}
}

// hexVal is the value of the hexadecimal digit c, and -1 for a byte that
// is none.
func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// simpleEscapes are Python's one-character escapes.
var simpleEscapes = map[byte]byte{'\\': '\\', '\'': '\'', '"': '"', 'a': 7, 'b': 8, 'f': 12, 'n': '\n', 'r': '\r', 't': '\t', 'v': 11}

// escape decodes one backslash escape at p.pos, as Python does in a
// non-raw string.
func (p *literalParser) escape(b *strings.Builder) error {
	at := p.pos
	src := p.src
	p.pos++ // the backslash
	c := src[p.pos]
	if v, ok := simpleEscapes[c]; ok {
		b.WriteByte(v)
		p.pos++
		return nil
	}
	switch {
	case c == '\n':
		p.pos++
		return nil
	case c == '\r':
		p.pos++
		if p.pos < len(src) && src[p.pos] == '\n' {
			p.pos++
		}
		return nil
	case c >= '0' && c <= '7':
		v := 0
		for n := 0; n < 3 && p.pos < len(src) && src[p.pos] >= '0' && src[p.pos] <= '7'; n++ {
			v = v*8 + int(src[p.pos]-'0')
			p.pos++
		}
		b.WriteRune(rune(v))
		return nil
	case c == 'x' || c == 'u' || c == 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		p.pos++
		if p.pos+n > len(src) {
			return p.errAt(at, "truncated \\%c escape", c)
		}
		v := 0
		for i := 0; i < n; i++ {
			h := hexVal(src[p.pos+i])
			if h < 0 {
				return p.errAt(at, "truncated \\%c escape", c)
			}
			v = v*16 + h
		}
		p.pos += n
		if v > utf8.MaxRune {
			return p.errAt(at, "illegal Unicode character in \\U escape")
		}
		if v >= 0xD800 && v <= 0xDFFF {
			return p.errAt(at, "surrogate code points in strings are not supported")
		}
		b.WriteRune(rune(v))
		return nil
	case c == 'N':
		return p.errAt(at, "\\N{...} escapes are not supported")
	}
	// An unknown escape keeps its backslash.
	b.WriteByte('\\')
	return nil
}
