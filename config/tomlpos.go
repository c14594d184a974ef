package config

import (
	"strconv"
	"strings"
)

// keyLines maps every key of a TOML document, its path joined by "\x00",
// to the line where it is first written: the line of its table header, of
// its key = value, or of its key inside an inline table. Intermediate keys
// of dotted keys and headers count as written there too.
//
// It is a tolerant scanner, not a parser: it runs on documents the TOML
// decoder has accepted, only to put line numbers on errors, and never
// fails (on other input the lines are merely less precise).
func keyLines(src []byte) map[string]int {
	s := &tomlScan{src: src, line: 1, lines: map[string]int{}}
	s.document()
	return s.lines
}

// lineOf is the line of the key at path, or of its closest written parent,
// or 1.
func lineOf(lines map[string]int, path ...string) int {
	for n := len(path); n > 0; n-- {
		if l, ok := lines[strings.Join(path[:n], "\x00")]; ok {
			return l
		}
	}
	return 1
}

type tomlScan struct {
	src   []byte
	i     int
	line  int
	lines map[string]int
}

func (s *tomlScan) eof() bool { return s.i >= len(s.src) }

func (s *tomlScan) peek(k int) byte {
	if s.i+k < len(s.src) {
		return s.src[s.i+k]
	}
	return 0
}

// adv moves n bytes on, counting lines.
func (s *tomlScan) adv(n int) {
	for ; n > 0 && s.i < len(s.src); n-- {
		if s.src[s.i] == '\n' {
			s.line++
		}
		s.i++
	}
}

func (s *tomlScan) record(path []string) {
	for n := 1; n <= len(path); n++ {
		k := strings.Join(path[:n], "\x00")
		if _, ok := s.lines[k]; !ok {
			s.lines[k] = s.line
		}
	}
}

func (s *tomlScan) document() {
	var table []string
	for !s.eof() {
		start := s.i
		s.skipSpaceNL()
		if s.eof() {
			break
		}
		if s.peek(0) == '[' {
			s.adv(1)
			if s.peek(0) == '[' {
				s.adv(1)
			}
			table = s.key()
			s.record(table)
			for !s.eof() && s.peek(0) != '\n' { // "]", "]]", a comment
				s.adv(1)
			}
		} else {
			path := join(table, s.key())
			s.record(path)
			s.skipSpace()
			if s.peek(0) == '=' {
				s.adv(1)
			}
			s.skipSpace()
			s.value(path, 0)
		}
		if s.i == start {
			s.adv(1)
		}
	}
}

func join(a, b []string) []string {
	return append(append(make([]string, 0, len(a)+len(b)), a...), b...)
}

func (s *tomlScan) skipSpace() {
	for c := s.peek(0); c == ' ' || c == '\t' || c == '\r'; c = s.peek(0) {
		s.adv(1)
	}
}

// skipSpaceNL skips white space, newlines and comments.
func (s *tomlScan) skipSpaceNL() {
	for !s.eof() {
		switch s.peek(0) {
		case ' ', '\t', '\r', '\n':
			s.adv(1)
		case '#':
			for !s.eof() && s.peek(0) != '\n' {
				s.adv(1)
			}
		default:
			return
		}
	}
}

// key reads a possibly dotted key.
func (s *tomlScan) key() []string {
	var parts []string
	for {
		s.skipSpace()
		var part string
		switch s.peek(0) {
		case '"':
			part = s.basicString()
		case '\'':
			part = s.literalString()
		default:
			st := s.i
			for !s.eof() && !strings.ContainsRune(" \t\r\n=.[]\"'#,{}", rune(s.src[s.i])) {
				s.adv(1)
			}
			part = string(s.src[st:s.i])
		}
		parts = append(parts, part)
		s.skipSpace()
		if s.peek(0) != '.' {
			return parts
		}
		s.adv(1)
	}
}

// basicString reads a one-line "..." string and returns its value.
func (s *tomlScan) basicString() string {
	st := s.i
	s.adv(1)
	for !s.eof() {
		c := s.peek(0)
		if c == '\n' {
			break
		}
		if c == '\\' {
			s.adv(2)
			continue
		}
		s.adv(1)
		if c == '"' {
			break
		}
	}
	raw := strings.TrimPrefix(string(s.src[st:s.i]), `"`)
	return unescape(strings.TrimSuffix(raw, `"`))
}

// unescape decodes the escapes of a TOML basic string; it leaves bad ones
// as they are.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte(0x1b)
		case '"', '\\':
			b.WriteByte(c)
		case 'x', 'u', 'U':
			n := 2
			if c == 'u' {
				n = 4
			} else if c == 'U' {
				n = 8
			}
			if i+n < len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil {
					b.WriteRune(rune(r))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}

// literalString reads a one-line '...' string and returns its value.
func (s *tomlScan) literalString() string {
	s.adv(1)
	st := s.i
	for !s.eof() && s.peek(0) != '\'' && s.peek(0) != '\n' {
		s.adv(1)
	}
	v := string(s.src[st:s.i])
	if s.peek(0) == '\'' {
		s.adv(1)
	}
	return v
}

// multiline skips a multi-line string, basic (three double quotes) or
// literal (three single quotes).
func (s *tomlScan) multiline(q byte, escapes bool) {
	s.adv(3)
	for !s.eof() {
		c := s.peek(0)
		if escapes && c == '\\' {
			s.adv(2)
			continue
		}
		if c == q && s.peek(1) == q && s.peek(2) == q {
			s.adv(3)
			for extra := 0; extra < 2 && s.peek(0) == q; extra++ {
				s.adv(1)
			}
			return
		}
		s.adv(1)
	}
}

// value skips a value, recording the keys of inline tables under path.
func (s *tomlScan) value(path []string, depth int) {
	if depth > 64 {
		return
	}
	switch c := s.peek(0); {
	case c == '"' && s.peek(1) == '"' && s.peek(2) == '"':
		s.multiline('"', true)
	case c == '\'' && s.peek(1) == '\'' && s.peek(2) == '\'':
		s.multiline('\'', false)
	case c == '"':
		s.basicString()
	case c == '\'':
		s.literalString()
	case c == '[':
		s.adv(1)
		for {
			s.skipSpaceNL()
			if s.eof() {
				return
			}
			if s.peek(0) == ']' {
				s.adv(1)
				return
			}
			st := s.i
			s.value(path, depth+1)
			s.skipSpaceNL()
			if s.peek(0) == ',' {
				s.adv(1)
			}
			if s.i == st {
				s.adv(1)
			}
		}
	case c == '{':
		s.adv(1)
		for {
			s.skipSpaceNL()
			if s.eof() {
				return
			}
			if s.peek(0) == '}' {
				s.adv(1)
				return
			}
			st := s.i
			p := join(path, s.key())
			s.record(p)
			s.skipSpace()
			if s.peek(0) == '=' {
				s.adv(1)
			}
			s.skipSpace()
			s.value(p, depth+1)
			s.skipSpaceNL()
			if s.peek(0) == ',' {
				s.adv(1)
			}
			if s.i == st {
				s.adv(1)
			}
		}
	default:
		for !s.eof() && !strings.ContainsRune(" \t\r\n,]}#", rune(s.src[s.i])) {
			s.adv(1)
		}
	}
}
