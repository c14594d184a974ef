// Package perm enforces allow/deny rules on the agent's file access by path
// glob.
//
// A rule is written "EFFECT OPS GLOB", for example
//
//	deny write /etc/**
//	allow read /docs/*.md
//	deny all /secrets/**
//
// EFFECT is allow or deny. OPS is read, write or all. Reading is what
// read_file, ls, glob and grep do (Stat, Read, List and Walk of the
// backend); writing is what write_file, edit_file and delete do (Write,
// Update and Delete). GLOB is a doublestar pattern (*, ?, [a-z], {a,b},
// and ** for any number of directories) matched against the whole virtual
// path; one that does not start with "/" is taken from the root, and
// "/dir/**" matches /dir itself and everything below it.
//
// Rules are checked in order and the first whose OPS and GLOB match the
// access decides it; when none matches, the access is allowed. A denied
// call gets an error naming the rule, and listings and searches leave out
// what their caller may not read.
//
// A Guard (guard.go) protects the control plane on disk, the files that
// decide how later runs behave: it judges a change by the real places a
// path reaches (through symbolic links), refuses some places outright and
// lets others change only in a call a person approved; its CheckCall makes
// such calls wait for the person (see approve.WithCheck).
package perm

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/deepagents-go/deepagents/vfs"
)

// Op is a kind of access.
type Op uint8

// The kinds of access; All in a rule means both.
const (
	Read Op = 1 << iota
	Write
	All = Read | Write
)

func (o Op) String() string {
	switch o {
	case Read:
		return "read"
	case Write:
		return "write"
	case All:
		return "all"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Rule allows or denies some kinds of access to the paths its glob matches.
type Rule struct {
	Allow bool
	Ops   Op
	Glob  string // a clean pattern starting with "/"
}

// String returns the rule as Parse reads it.
func (r Rule) String() string {
	effect := "deny"
	if r.Allow {
		effect = "allow"
	}
	return effect + " " + r.Ops.String() + " " + r.Glob
}

// Matches reports whether the rule speaks about op on path (a clean
// virtual path).
func (r Rule) Matches(op Op, path string) bool {
	if r.Ops&op == 0 {
		return false
	}
	ok, err := doublestar.Match(r.Glob, path)
	return ok && err == nil
}

// MaxRuleLen bounds the text of one rule, in bytes.
const MaxRuleLen = 4096

// Parse reads one rule, "EFFECT OPS GLOB" (see the package comment); the
// words may be separated by any run of spaces or tabs, and the glob may
// itself hold spaces.
func Parse(s string) (Rule, error) {
	if len(s) > MaxRuleLen {
		return Rule{}, fmt.Errorf("permission rule is %d bytes, over the limit of %d", len(s), MaxRuleLen)
	}
	bad := func(why string) (Rule, error) {
		return Rule{}, fmt.Errorf("permission rule %q: %s; write it as EFFECT OPS GLOB, such as \"deny write /etc/**\"", s, why)
	}
	rest := strings.TrimSpace(s)
	effect, rest := cutWord(rest)
	ops, glob := cutWord(rest)
	var r Rule
	switch strings.ToLower(effect) {
	case "allow":
		r.Allow = true
	case "deny":
	case "":
		return bad("it is empty")
	default:
		return bad(fmt.Sprintf("it starts with %q, not allow or deny", effect))
	}
	switch strings.ToLower(ops) {
	case "read":
		r.Ops = Read
	case "write":
		r.Ops = Write
	case "all":
		r.Ops = All
	case "":
		return bad("it names no operation (read, write or all)")
	default:
		return bad(fmt.Sprintf("the operation %q is not read, write or all", ops))
	}
	if glob == "" {
		return bad("it has no path pattern")
	}
	g, err := cleanGlob(glob)
	if err != nil {
		return bad(err.Error())
	}
	r.Glob = g
	return r, nil
}

func cutWord(s string) (word, rest string) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeft(s[i:], " \t")
}

// cleanGlob makes a pattern absolute and clean as vfs.Clean makes paths,
// keeping its wildcards, and checks that doublestar accepts it.
func cleanGlob(g string) (string, error) {
	if strings.ContainsAny(g, "\x00\\") {
		return "", errors.New("the pattern holds a NUL byte or a backslash")
	}
	if !utf8.ValidString(g) {
		// The matcher reads bytes that are not UTF-8 as one replacement
		// character, so such a pattern would match other paths too.
		return "", errors.New("the pattern is not valid UTF-8")
	}
	var b strings.Builder
	for seg := range strings.SplitSeq(g, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			return "", errors.New("the pattern holds '..'")
		}
		b.WriteByte('/')
		b.WriteString(seg)
	}
	out := b.String()
	if out == "" {
		out = "/"
	}
	if !doublestar.ValidatePattern(out) {
		return "", fmt.Errorf("the pattern %q is not a valid glob (check its brackets and braces)", g)
	}
	return out, nil
}

// Rules are checked in order; the first that matches decides.
type Rules []Rule

// ParseRules reads one rule per element, skipping empty ones and those
// starting with "#".
func ParseRules(lines []string) (Rules, error) {
	var out Rules
	var errs []error
	for _, l := range lines {
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		r, err := Parse(l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Strings returns the rules as Parse reads them.
func (rs Rules) Strings() []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// Decide returns the rule that decides op on path and whether it allows
// it; with no matching rule, ok is false and the access is allowed.
func (rs Rules) Decide(op Op, path string) (rule Rule, ok bool) {
	for _, r := range rs {
		if r.Matches(op, path) {
			return r, true
		}
	}
	return Rule{}, false
}

// Check returns nil when op on path is allowed, and otherwise a
// *vfs.DeniedError naming the rule that denies it. opName is the
// operation's name in the error ("read", "list", "write", "delete", ...).
func (rs Rules) Check(op Op, opName, path string) error {
	if r, ok := rs.Decide(op, path); ok && !r.Allow {
		return &vfs.DeniedError{Op: opName, Path: path, Reason: fmt.Sprintf("permission denied by rule %q", r.String())}
	}
	return nil
}
