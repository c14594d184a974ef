package config

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// FileError is one problem in one file: the file, the 1-based line it is
// on (0 when it concerns the whole file, e.g. it cannot be read) and what
// is wrong. Its Error text is "path:line: msg". Loaders that find several
// problems return them all with errors.Join; errors.As finds the first.
type FileError struct {
	Path string
	Line int
	Msg  string
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// problems collects the FileErrors of one file.
type problems struct {
	path string
	errs []*FileError
}

func (p *problems) add(line int, format string, args ...any) {
	if line < 1 {
		line = 1
	}
	p.errs = append(p.errs, &FileError{Path: p.path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// err returns the collected problems in line order (nil when none).
func (p *problems) err() error { return joinFileErrors(p.errs) }

func joinFileErrors(fes []*FileError) error {
	if len(fes) == 0 {
		return nil
	}
	slices.SortStableFunc(fes, func(a, b *FileError) int { return cmp.Compare(a.Line, b.Line) })
	if len(fes) == 1 {
		return fes[0]
	}
	errs := make([]error, len(fes))
	for i, fe := range fes {
		errs[i] = fe
	}
	return errors.Join(errs...)
}

// FileErrors returns the FileErrors inside err (one returned by this
// package: a *FileError or an errors.Join of them), in order.
func FileErrors(err error) []*FileError {
	var out []*FileError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if fe, ok := e.(*FileError); ok {
			out = append(out, fe)
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var fe *FileError
		if errors.As(e, &fe) {
			out = append(out, fe)
		}
	}
	walk(err)
	return out
}

// nameRe is the shape of subagent and provider names.
var nameRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// unknownKey phrases an unknown key (shown as full, the last part of which
// is key), with the closest of the known keys beside it as a hint.
func unknownKey(full, key string, known []string) string {
	if s := suggest(key, known); s != "" {
		return fmt.Sprintf("unknown key %q (did you mean %q?)", full, s)
	}
	return fmt.Sprintf("unknown key %q (known keys: %s)", full, strings.Join(known, ", "))
}

// suggest returns the known word closest to w when it is a plausible typo.
func suggest(w string, known []string) string {
	best, bestD := "", 0
	lw := strings.ToLower(w)
	for _, k := range known {
		d := editDistance(lw, strings.ToLower(k))
		if d == 0 {
			return k // differs only in case
		}
		if limit := max(1, min(3, len(k)/3)); d <= limit && (best == "" || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b, in
// bytes: insertions, deletions, substitutions and swaps of neighbours each
// count 1. Words longer than 64 bytes are never close.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// quoteList renders words as `"a", "b" or "c"`.
func quoteList(words []string, last string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " " + last + " " + q[len(q)-1]
}
