package perm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Rules cross to another process as text, with a search or a page that a
// backend far from its files runs (vfs.SearchRequest.Rules). Rule.String
// is not always read back to the same rule: Parse trims spaces at the ends
// of a glob and cleans it, and a rule made in Go may hold a glob Parse
// would change. Encode writes such a rule in an exact form, which
// DecodeRules reads back unchanged.

// exactWord starts the exact form of a rule: "exact EFFECT OPS GLOB", OPS
// as a number and GLOB quoted as in Go. Parse refuses it, so a reader that
// knows only Parse fails rather than read another rule.
const exactWord = "exact"

// Encode returns the rules as text that DecodeRules reads back to exactly
// these rules: each as Parse reads it when that gives the same rule, and
// in the exact form otherwise.
func (rs Rules) Encode() []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		s := r.String()
		if back, err := Parse(s); err != nil || back != r {
			effect := "deny"
			if r.Allow {
				effect = "allow"
			}
			s = fmt.Sprintf("%s %s %d %s", exactWord, effect, r.Ops, strconv.Quote(r.Glob))
		}
		out[i] = s
	}
	return out
}

// DecodeRules reads rules that Encode wrote, or rules as ParseRules reads
// them (what Rules.Strings writes).
func DecodeRules(lines []string) (Rules, error) {
	var out Rules
	var errs []error
	for _, l := range lines {
		if !strings.HasPrefix(l, exactWord+" ") {
			rs, err := ParseRules([]string{l})
			if err != nil {
				errs = append(errs, err)
			}
			out = append(out, rs...)
			continue
		}
		r, err := decodeExact(l)
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

// decodeExact reads "exact EFFECT OPS GLOB".
func decodeExact(l string) (Rule, error) {
	if len(l) > maxExactLen {
		return Rule{}, fmt.Errorf("permission rule is %d bytes, over the limit", len(l))
	}
	bad := func(why string) (Rule, error) {
		return Rule{}, fmt.Errorf("permission rule %q in exact form: %s; it is written by perm.Rules.Encode as exact EFFECT OPS \"GLOB\"", l, why)
	}
	fields := strings.SplitN(l, " ", 4)
	if len(fields) != 4 {
		return bad("it has fewer than four words")
	}
	var r Rule
	switch fields[1] {
	case "allow":
		r.Allow = true
	case "deny":
	default:
		return bad(fmt.Sprintf("the effect %q is not allow or deny", fields[1]))
	}
	ops, err := strconv.ParseUint(fields[2], 10, 8)
	if err != nil || strconv.FormatUint(ops, 10) != fields[2] {
		return bad(fmt.Sprintf("the operations %q are not a number from 0 to 255", fields[2]))
	}
	r.Ops = Op(ops)
	glob, err := strconv.Unquote(fields[3])
	if err != nil || !strings.HasPrefix(fields[3], `"`) {
		return bad("its glob is not a quoted string")
	}
	r.Glob = glob
	return r, nil
}

// maxExactLen bounds the text of a rule in exact form: a rule made in Go
// is not held to MaxRuleLen, and its glob may grow fourfold when quoted.
const maxExactLen = 1 << 20
