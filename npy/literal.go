package npy

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds how deeply brackets may nest in a header literal. numpy's
// own headers nest a few levels; the bound keeps hostile input from growing
// the stack.
const maxDepth = 64

// literalParser parses the subset of Python literal syntax that .npy headers
// use: dicts, lists, tuples, strings, integers, True and False. It mirrors
// what ast.literal_eval (after numpy's Python 2 'L' filter) accepts for
// these forms and evaluates nothing.
type literalParser struct {
	src      []byte
	pos      int
	base     int64 // stream offset of src[0], for error offsets
	utf8     bool  // version 3.0: the header is UTF-8; otherwise latin-1
	allowL   bool  // versions 1.0 and 2.0: accept a Python 2 'L' after an int
	depth    int   // current bracket nesting
	sawToken bool  // a token has been read (for the leading-indent rule)
}

func (p *literalParser) errAt(pos int, format string, args ...any) error {
	return &FormatError{Offset: p.base + int64(pos), Msg: fmt.Sprintf(format, args...)}
}

// parseLiteral parses a whole header: one literal surrounded by whitespace,
// newlines and comments, as Python's eval mode allows them. For 1.0 and 2.0
// headers numpy first passes the text through Python's tokenize/untokenize
// (to drop Python 2 'L' suffixes), which changes how a few odd whitespace
// layouts read; those effects are mirrored here.
func parseLiteral(src []byte, base int64, isUTF8, allowL bool) (Value, error) {
	p := &literalParser{src: src, base: base, utf8: isUTF8, allowL: allowL}
	for i, c := range src {
		if c == 0 {
			return nil, p.errAt(i, "header contains a NUL byte")
		}
	}
	if isUTF8 && !utf8.Valid(src) {
		i := 0
		for i < len(src) {
			r, n := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, p.errAt(i, "header is not valid UTF-8")
	}
	// literal_eval strips leading spaces and tabs from the first line; after
	// untokenize, form feeds there have become spaces too.
	for p.pos < len(src) && (src[p.pos] == ' ' || src[p.pos] == '\t' || allowL && src[p.pos] == '\f') {
		p.pos++
	}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.pos >= len(src) {
		return nil, p.errAt(p.pos, "header is empty")
	}
	first := p.pos
	if allowL {
		if err := p.checkBlankLineCR(first); err != nil {
			return nil, err
		}
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	last := p.pos
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.pos < len(src) {
		return nil, p.errAt(p.pos, "unexpected %s after the header literal", p.describe(p.pos))
	}
	if err := p.checkTrailingLine(last); err != nil {
		return nil, err
	}
	return v, nil
}

// checkBlankLineCR mirrors Python's tokenize module, which numpy runs over
// 1.0 and 2.0 headers: a line (split at LF only) that starts, after spaces,
// tabs and form feeds, with a carriage return is read as a blank line, so
// if more follows the CR before the literal starts, numpy fails.
func (p *literalParser) checkBlankLineCR(first int) error {
	for ls := 0; ls <= first; {
		i := ls
		for i < len(p.src) && (p.src[i] == ' ' || p.src[i] == '\t' || p.src[i] == '\f') {
			i++
		}
		if i+1 < len(p.src) && p.src[i] == '\r' && p.src[i+1] != '\n' {
			return p.errAt(i, "carriage return at the start of a line before the header literal")
		}
		nl := bytes.IndexByte(p.src[ls:], '\n')
		if nl < 0 {
			break
		}
		ls += nl + 1
	}
	return nil
}

// checkTrailingLine mirrors how Python treats a last line of only spaces
// and tabs after the literal: an error when it follows a newline in a 3.0
// header, or a lone carriage return in a 1.0 or 2.0 header (where numpy's
// untokenize step drops such a line after a line feed and turns form feeds
// into spaces).
func (p *literalParser) checkTrailingLine(last int) error {
	tail := p.src[last:]
	var i int
	if p.allowL {
		if j := bytes.LastIndexByte(tail, '\n'); j >= 0 {
			tail = tail[j+1:]
		}
		i = bytes.LastIndexByte(tail, '\r')
	} else {
		i = bytes.LastIndexAny(tail, "\r\n")
	}
	if i < 0 {
		return nil
	}
	// A newline ending a backslash continuation does not start a line.
	if i > 0 && tail[i-1] == '\\' || i > 1 && tail[i] == '\n' && tail[i-1] == '\r' && tail[i-2] == '\\' {
		return nil
	}
	rest := tail[i+1:]
	if len(rest) == 0 || len(bytes.Trim(rest, " \t\f")) != 0 {
		return nil
	}
	if !p.allowL {
		// A form feed resets Python's column count: only spaces after the
		// last one make the line an (illegal) indented empty line.
		if j := bytes.LastIndexByte(rest, '\f'); j >= 0 {
			rest = rest[j+1:]
		}
		if len(rest) == 0 {
			return nil
		}
	}
	return p.errAt(len(p.src)-len(rest), "a last line of only spaces after the header literal")
}

// describe names the character at i for error messages.
func (p *literalParser) describe(i int) string {
	if i >= len(p.src) {
		return "end of header"
	}
	c := p.src[i]
	if c >= 0x21 && c < 0x7f {
		return fmt.Sprintf("%q", string(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// skipSpace skips whitespace, comments and line continuations. Newlines are
// only insignificant inside brackets, or before and after the literal.
func (p *literalParser) skipSpace() error {
	lineStart := p.pos == 0
	indented := false
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch c {
		case ' ', '\t':
			if lineStart && !p.sawToken {
				indented = true
			}
			p.pos++
		case '\f':
			indented = false
			p.pos++
		case '\n', '\r':
			if p.depth == 0 && p.sawToken && !p.atEndAfter(p.pos) {
				return p.errAt(p.pos, "newline inside the header literal")
			}
			p.pos++
			lineStart, indented = true, false
		case '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
				p.pos++
			}
		case '\\':
			n := 0
			if p.pos+1 < len(p.src) && p.src[p.pos+1] == '\n' {
				n = 2
			} else if p.pos+1 < len(p.src) && p.src[p.pos+1] == '\r' {
				n = 2
				if p.pos+2 < len(p.src) && p.src[p.pos+2] == '\n' {
					n = 3
				}
			}
			if n == 0 {
				return p.errAt(p.pos, "unexpected %s", p.describe(p.pos))
			}
			if p.pos+n == len(p.src) {
				return p.errAt(p.pos, "line continuation at the end of the header")
			}
			p.pos += n
			lineStart = true
		default:
			if indented && !p.sawToken {
				return p.errAt(p.pos, "unexpected indent before the header literal")
			}
			return nil
		}
	}
	return nil
}

// atEndAfter reports whether nothing but whitespace, newlines and comments
// follow position i.
func (p *literalParser) atEndAfter(i int) bool {
	for i < len(p.src) {
		switch p.src[i] {
		case ' ', '\t', '\f', '\n', '\r':
			i++
		case '#':
			for i < len(p.src) && p.src[i] != '\n' && p.src[i] != '\r' {
				i++
			}
		default:
			return false
		}
	}
	return true
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func (p *literalParser) value() (Value, error) {
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.pos >= len(p.src) {
		return nil, p.errAt(p.pos, "unexpected end of header")
	}
	p.sawToken = true
	start := p.pos
	c := p.src[p.pos]
	switch {
	case c == '{' || c == '[' || c == '(':
		p.depth++
		if p.depth > maxDepth {
			return nil, p.errAt(start, "literal nested deeper than %d", maxDepth)
		}
		p.pos++
		var v Value
		var err error
		switch c {
		case '{':
			v, err = p.dict(start)
		case '[':
			v, err = p.list()
		default:
			v, err = p.paren()
		}
		p.depth--
		return v, err
	case c == '\'' || c == '"':
		return p.strings()
	case c >= '0' && c <= '9':
		return p.integer(false)
	case c == '-' || c == '+':
		p.pos++
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) || p.src[p.pos] < '0' || p.src[p.pos] > '9' {
			return nil, p.errAt(p.pos, "expected a number after %q", string(c))
		}
		return p.integer(c == '-')
	case isIdentByte(c):
		end := p.pos
		for end < len(p.src) && isIdentByte(p.src[end]) {
			end++
		}
		word := string(p.src[p.pos:end])
		if end < len(p.src) && (p.src[end] == '\'' || p.src[end] == '"') {
			switch word {
			case "u", "U", "r", "R":
				return p.strings()
			}
			return nil, p.errAt(start, "unsupported string prefix %q", word)
		}
		switch word {
		case "True":
			p.pos = end
			return true, nil
		case "False":
			p.pos = end
			return false, nil
		case "None":
			p.pos = end
			return nil, nil
		}
		return nil, p.errAt(start, "unsupported name %q in header", truncate(word))
	}
	return nil, p.errAt(start, "unexpected %s", p.describe(start))
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// sequence reads comma-separated values up to close. It reports whether a
// comma was seen (which makes a parenthesised single value a tuple).
func (p *literalParser) sequence(close byte) ([]Value, bool, error) {
	var out []Value
	comma := false
	for {
		if err := p.skipSpace(); err != nil {
			return nil, false, err
		}
		if p.pos < len(p.src) && p.src[p.pos] == close {
			p.pos++
			return out, comma, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, false, err
		}
		out = append(out, v)
		if err := p.skipSpace(); err != nil {
			return nil, false, err
		}
		if p.pos >= len(p.src) {
			return nil, false, p.errAt(p.pos, "unexpected end of header, expected '%c'", close)
		}
		switch p.src[p.pos] {
		case ',':
			comma = true
			p.pos++
		case close:
			p.pos++
			return out, comma, nil
		default:
			return nil, false, p.errAt(p.pos, "unexpected %s, expected ',' or '%c'", p.describe(p.pos), close)
		}
	}
}

func (p *literalParser) list() (Value, error) {
	vs, _, err := p.sequence(']')
	if err != nil {
		return nil, err
	}
	if vs == nil {
		vs = []Value{}
	}
	return List(vs), nil
}

func (p *literalParser) paren() (Value, error) {
	vs, comma, err := p.sequence(')')
	if err != nil {
		return nil, err
	}
	if len(vs) == 1 && !comma {
		return vs[0], nil // a parenthesised expression, not a tuple
	}
	if vs == nil {
		vs = []Value{}
	}
	return Tuple(vs), nil
}

func (p *literalParser) dict(start int) (Value, error) {
	d := &Dict{}
	for {
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			p.pos++
			return d, nil
		}
		kpos := p.pos
		k, err := p.value()
		if err != nil {
			return nil, err
		}
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, p.errAt(p.pos, "unexpected %s, expected ':' in dict (sets are not supported)", p.describe(p.pos))
		}
		p.pos++
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		vpos := p.pos
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if !hashable(k) {
			return nil, p.errAt(kpos, "unhashable dict key")
		}
		d.set(k, v, p.base+int64(vpos))
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) {
			return nil, p.errAt(p.pos, "unexpected end of header, expected '}'")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return d, nil
		default:
			return nil, p.errAt(p.pos, "unexpected %s, expected ',' or '}'", p.describe(p.pos))
		}
	}
}

func hashable(v Value) bool {
	switch v := v.(type) {
	case List, *Dict:
		return false
	case Tuple:
		for _, e := range v {
			if !hashable(e) {
				return false
			}
		}
	}
	return true
}

// keyEqual compares dict keys as Python would for the key types parsed here
// (True == 1 and False == 0, as in Python).
func keyEqual(a, b Value) bool {
	norm := func(v Value) Value {
		if b, ok := v.(bool); ok {
			if b {
				return int64(1)
			}
			return int64(0)
		}
		return v
	}
	a, b = norm(a), norm(b)
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case Tuple:
		y, ok := b.(Tuple)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !keyEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// set stores v under k: a repeated key keeps its first position and its
// last value, as in Python.
func (d *Dict) set(k, v Value, off int64) {
	for i, old := range d.Keys {
		if keyEqual(old, k) {
			d.Values[i] = v
			d.offsets[i] = off
			return
		}
	}
	d.Keys = append(d.Keys, k)
	d.Values = append(d.Values, v)
	d.offsets = append(d.offsets, off)
}

// offset is the stream offset of the value stored under k, or -1.
func (d *Dict) offset(k string) int64 {
	for i, key := range d.Keys {
		if s, ok := key.(string); ok && s == k && i < len(d.offsets) {
			return d.offsets[i]
		}
	}
	return -1
}

// Get returns the value stored under the string key k.
func (d *Dict) Get(k string) (Value, bool) {
	for i, key := range d.Keys {
		if s, ok := key.(string); ok && s == k {
			return d.Values[i], true
		}
	}
	return nil, false
}

// integer parses a Python int literal (decimal, 0x, 0o, 0b, with
// underscores) into an int64.
func (p *literalParser) integer(neg bool) (Value, error) {
	start := p.pos
	src := p.src
	end := start
	for end < len(src) && (isIdentByte(src[end]) || src[end] == '.') {
		if src[end] == '.' {
			return nil, p.errAt(start, "floating-point numbers are not allowed in a header")
		}
		end++
	}
	tok := string(src[start:end])
	base := 10
	digits := tok
	if len(tok) > 1 && tok[0] == '0' {
		switch tok[1] {
		case 'x', 'X':
			base, digits = 16, tok[2:]
		case 'o', 'O':
			base, digits = 8, tok[2:]
		case 'b', 'B':
			base, digits = 2, tok[2:]
		}
		if base != 10 && strings.HasPrefix(digits, "_") {
			digits = digits[1:]
		}
	}
	// Python tokenizes "3L" as the number 3 followed by the name L; numpy
	// drops that name in 1.0 and 2.0 headers.
	trailingL := false
	if p.allowL && strings.HasSuffix(digits, "L") {
		digits = digits[:len(digits)-1]
		trailingL = true
	}
	if digits == "" || strings.HasPrefix(digits, "_") || strings.HasSuffix(digits, "_") || strings.Contains(digits, "__") {
		return nil, p.errAt(start, "invalid integer literal %q", truncate(tok))
	}
	if base == 10 && digits[0] == '0' && strings.Trim(digits, "0_") != "" {
		return nil, p.errAt(start, "invalid integer literal %q (leading zeros)", truncate(tok))
	}
	var mag uint64
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c == '_' {
			continue
		}
		d := hexVal(c)
		if d < 0 || d >= base {
			if c == 'e' || c == 'E' || c == 'j' || c == 'J' {
				if base == 10 {
					return nil, p.errAt(start, "floating-point or complex numbers are not allowed in a header")
				}
			}
			return nil, p.errAt(start, "invalid integer literal %q", truncate(tok))
		}
		if mag > (limit-uint64(d))/uint64(base) {
			return nil, p.errAt(start, "integer %q does not fit in 64 bits", truncate(tok))
		}
		mag = mag*uint64(base) + uint64(d)
	}
	p.pos = end
	if !trailingL && p.allowL {
		p.skipSpacedL()
	}
	if neg {
		if mag == uint64(math.MaxInt64)+1 {
			return int64(math.MinInt64), nil
		}
		return -int64(mag), nil
	}
	return int64(mag), nil
}

// skipSpacedL skips the name L after a number and the blanks before it
// ("3 L"), which numpy drops as it drops "3L".
func (p *literalParser) skipSpacedL() {
	src := p.src
	q := p.pos
	for q < len(src) && (src[q] == ' ' || src[q] == '\t' || src[q] == '\f') {
		q++
	}
	if q < len(src) && src[q] == 'L' && (q+1 == len(src) || !isIdentByte(src[q+1])) {
		p.pos = q + 1
	}
}
