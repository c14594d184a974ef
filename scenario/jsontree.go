package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits on a scenario file. They keep a hostile or broken file from taking
// unbounded memory or time; real scenarios are far below them.
const (
	// MaxFileSize is the largest scenario file read (16 MiB).
	MaxFileSize = 16 << 20
	// MaxDepth is how deeply arrays and objects may nest, tool-call
	// arguments included.
	MaxDepth = 64
	// MaxDelayMS bounds delay_ms (the whole scenario's and each step's):
	// 10 minutes per model call.
	MaxDelayMS = 10 * 60 * 1000
	// MaxTimeoutMS bounds a subagent's timeout_ms: 24 hours.
	MaxTimeoutMS = 24 * 60 * 60 * 1000
)

// kind is the type of a JSON value.
type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// words names a JSON kind for error messages.
func (k kind) words() string {
	return [...]string{"null", "true or false", "a number", "a string", "a list", "an object"}[k]
}

// node is one JSON value with the byte offsets it spans, so that every error
// about it can name a line and column.
type node struct {
	kind       kind
	start, end int    // offsets of the value's text in the document
	str        string // the decoded text of a string
	boolean    bool
	members    []member // of an object, in document order
	items      []*node  // of an array
}

// member is one key of an object.
type member struct {
	key    string
	keyPos int
	val    *node
}

// get returns the value of key in an object node, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != kObject {
		return nil
	}
	for _, m := range n.members {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// posError is an error at a byte offset of the document.
type posError struct {
	off int
	msg string
}

func (e *posError) Error() string { return e.msg }

func errAt(off int, format string, args ...any) *posError {
	return &posError{off: off, msg: fmt.Sprintf(format, args...)}
}

// lineCol turns a byte offset into a 1-based line and a 1-based column
// counted in characters.
func lineCol(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line, lineStart := 1, 0
	for i := 0; i < off; i++ {
		if data[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return line, utf8.RuneCount(data[lineStart:off]) + 1
}

// lineCols is lineCol for many offsets at once, in one pass over data
// (offs need not be sorted).
func lineCols(data []byte, offs []int) [][2]int {
	order := make([]int, len(offs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return offs[a] - offs[b] })
	out := make([][2]int, len(offs))
	pos, line, col := 0, 1, 1
	for _, i := range order {
		off := min(max(offs[i], 0), len(data))
		for ; pos < off; pos++ {
			switch c := data[pos]; {
			case c == '\n':
				line, col = line+1, 1
			case c&0xC0 != 0x80: // the first byte of a character
				col++
			}
		}
		out[i] = [2]int{line, col}
	}
	return out
}

// parser reads one JSON document into a tree of nodes. Unlike
// encoding/json, it refuses duplicate keys and invalid UTF-8, and bounds
// nesting depth; every error carries the offset where the problem is.
type parser struct {
	data  []byte
	pos   int
	depth int
	// top is the key of the root object's member being read.
	top string
	// freeForm names a member of the root object whose value may repeat
	// keys (the free-form expect block); allDups allows them everywhere.
	freeForm string
	allDups  bool
}

// parseTree parses data, which must hold exactly one JSON value, refusing
// duplicate keys except inside the root object's freeForm member (when
// freeForm is not empty).
func parseTree(data []byte) (*node, error) { return parseTreeOpts(data, "", false) }

func parseTreeOpts(data []byte, freeForm string, allDups bool) (*node, error) {
	p := &parser{data: data, freeForm: freeForm, allDups: allDups}
	p.space()
	if p.pos == len(data) {
		return nil, errAt(0, "the file is empty; a scenario is a JSON object")
	}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(data) {
		return nil, errAt(p.pos, "unexpected text after the end of the JSON value: %s", p.describe())
	}
	return n, nil
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// describe names the character at p.pos for an error message.
func (p *parser) describe() string {
	if p.pos >= len(p.data) {
		return "the file ends"
	}
	r, size := utf8.DecodeRune(p.data[p.pos:])
	switch {
	case r == utf8.RuneError && size <= 1:
		return "a byte that is not valid UTF-8"
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf("control character %U", r)
	}
	return strconv.QuoteRune(r)
}

func (p *parser) value() (*node, error) {
	p.space()
	if p.pos >= len(p.data) {
		return nil, errAt(p.pos, "the file ends where a value was expected (is a bracket or quote missing?)")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.string()
		if err != nil {
			return nil, err
		}
		return &node{kind: kString, start: start, end: p.pos, str: s}, nil
	case c == '-' || c >= '0' && c <= '9':
		if err := p.number(); err != nil {
			return nil, err
		}
		return &node{kind: kNumber, start: start, end: p.pos}, nil
	default:
		for _, lit := range []struct {
			text string
			n    node
		}{{"true", node{kind: kBool, boolean: true}}, {"false", node{kind: kBool}}, {"null", node{kind: kNull}}} {
			if strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(lit.text))]), lit.text) {
				p.pos += len(lit.text)
				n := lit.n
				n.start, n.end = start, p.pos
				return &n, nil
			}
		}
		return nil, errAt(p.pos, "expected a value (a string, number, object, list, true, false or null), found %s", p.describe())
	}
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return errAt(p.pos, "nested more than %d levels deep (the limit)", MaxDepth)
	}
	return nil
}

func (p *parser) object() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	n := &node{kind: kObject, start: p.pos}
	p.pos++ // {
	seen := map[string]int{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		n.end = p.pos
		p.depth--
		return n, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, errAt(p.pos, "expected a key in double quotes, found %s", p.describe())
		}
		keyPos := p.pos
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		if p.depth == 1 {
			p.top = key
		}
		lenient := p.allDups || p.freeForm != "" && p.depth > 1 && p.top == p.freeForm
		if first, dup := seen[key]; dup && !lenient {
			l, c := lineCol(p.data, first)
			return nil, errAt(keyPos, "duplicate key %q (first given at line %d, column %d)", key, l, c)
		}
		if _, dup := seen[key]; !dup {
			seen[key] = keyPos
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, errAt(p.pos, "expected ':' after the key %q, found %s", key, p.describe())
		}
		p.pos++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, member{key: key, keyPos: keyPos, val: v})
		p.space()
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			n.end = p.pos
			p.depth--
			return n, nil
		}
		return nil, errAt(p.pos, "expected ',' or '}' after the value of %q, found %s", key, p.describe())
	}
}

func (p *parser) array() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	n := &node{kind: kArray, start: p.pos}
	p.pos++ // [
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		n.end = p.pos
		p.depth--
		return n, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, v)
		p.space()
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			n.end = p.pos
			p.depth--
			return n, nil
		}
		return nil, errAt(p.pos, "expected ',' or ']' after a list item, found %s", p.describe())
	}
}

// number checks the JSON number grammar; the text is converted later, by
// the field it is decoded into.
func (p *parser) number() error {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	intStart := p.pos
	if digits() == 0 {
		return errAt(p.pos, "a number needs digits, found %s", p.describe())
	}
	if p.data[intStart] == '0' && p.pos-intStart > 1 {
		return errAt(start, "a number must not start with 0")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return errAt(p.pos, "a number needs digits after the decimal point, found %s", p.describe())
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return errAt(p.pos, "a number needs digits in its exponent, found %s", p.describe())
		}
	}
	return nil
}

// string reads a quoted string at p.pos and returns its decoded text.
func (p *parser) string() (string, error) {
	start := p.pos
	p.pos++ // opening quote
	var b strings.Builder
	for {
		if p.pos >= len(p.data) {
			return "", errAt(start, "a string is never closed (missing '\"')")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c == '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		case c < 0x20:
			return "", errAt(p.pos, "control character %U inside a string (write it as an escape such as \\n)", rune(c))
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", errAt(p.pos, "invalid UTF-8 in a string (the file must be UTF-8 text)")
			}
			b.Write(p.data[p.pos : p.pos+size])
			p.pos += size
		}
	}
}

func (p *parser) escape(b *strings.Builder) error {
	at := p.pos
	if p.pos+1 >= len(p.data) {
		return errAt(at, "a string ends inside an escape sequence")
	}
	c := p.data[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		b.WriteByte(c)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		r, ok := p.hex4()
		if !ok {
			return errAt(at, `\u must be followed by four hex digits`)
		}
		if utf16.IsSurrogate(r) {
			// A surrogate pair is two escapes; a lone half becomes U+FFFD,
			// as encoding/json does.
			if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
				save := p.pos
				p.pos += 2
				if r2, ok := p.hex4(); ok {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						b.WriteRune(dec)
						return nil
					}
				}
				p.pos = save
			}
			r = utf8.RuneError
		}
		b.WriteRune(r)
	default:
		return errAt(at, "unknown escape sequence \\%s in a string", p.describeByte(c))
	}
	return nil
}

func (p *parser) describeByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return string(c)
	}
	return fmt.Sprintf("(byte %#x)", c)
}

func (p *parser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil || strings.ContainsAny(string(p.data[p.pos:p.pos+4]), "+-") {
		return 0, false
	}
	p.pos += 4
	return rune(v), true
}
