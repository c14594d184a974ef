package agent

import (
	"fmt"
	"slices"
	"strings"
)

// Segment is one level of an agent path: the agent's name and, below the
// top, the id of the parent's tool call that started it.
type Segment struct {
	Name   string `json:"name"`
	CallID string `json:"call_id,omitempty"`
}

// Path says where a run sits in a tree of delegations: the top-level agent
// first, then one segment per subagent below it. Its text form, used in
// events (Event.Agent), results and usage keys, reads
// "parent / general-purpose#call_1": segments joined by " / ", each below the
// top written NAME#CALLID. Build paths with RootPath and Child rather than
// by joining strings, and read a text form back with ParsePath.
type Path []Segment

// pathSep separates the segments of a path's text form.
const pathSep = " / "

// RootPath is the path of a top-level run of the named agent.
func RootPath(name string) Path { return Path{{Name: name}} }

// Child is the path of the subagent name started by this path's tool call
// callID. p is not changed.
func (p Path) Child(name, callID string) Path {
	return append(slices.Clip(p), Segment{Name: name, CallID: callID})
}

// Parent is the path of the agent that started this one; nil at the top.
func (p Path) Parent() Path {
	if len(p) <= 1 {
		return nil
	}
	return slices.Clip(p[:len(p)-1])
}

// Last is the path's own segment (the zero Segment for an empty path).
func (p Path) Last() Segment {
	if len(p) == 0 {
		return Segment{}
	}
	return p[len(p)-1]
}

// IsNested reports whether the path is a subagent's (below the top).
func (p Path) IsNested() bool { return len(p) > 1 }

// Equal reports whether both paths have the same segments.
func (p Path) Equal(q Path) bool { return slices.Equal(p, q) }

// String is the path's text form, e.g. "parent / general-purpose#call_1".
// The top segment is its name alone; below it a segment without a call id
// is its name alone.
func (p Path) String() string {
	if len(p) == 1 {
		return p[0].Name
	}
	return string(p.appendText(nil))
}

// MarshalText writes the text form, so a Path in JSON is a string, as an
// agent path always was there.
func (p Path) MarshalText() ([]byte, error) {
	n := 0
	for _, s := range p {
		n += len(pathSep) + len(s.Name) + 1 + len(s.CallID)
	}
	return p.appendText(make([]byte, 0, n)), nil
}

// appendText appends the text form to b.
func (p Path) appendText(b []byte) []byte {
	for i, s := range p {
		if i > 0 {
			b = append(b, pathSep...)
		}
		b = append(b, s.Name...)
		if i > 0 && s.CallID != "" {
			b = append(b, '#')
			b = append(b, s.CallID...)
		}
	}
	return b
}

// UnmarshalText reads the text form; the empty text is the empty path.
func (p *Path) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*p = nil
		return nil
	}
	q, err := ParsePath(string(b))
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// ParsePath reads a path's text form back. Below the top, a segment's call id
// is what follows its last "#", so subagent names may contain "#" but call
// ids may not. Empty names, empty call ids after a "#" and empty segments
// are errors, so that whenever ParsePath succeeds, String gives back exactly
// the text it was given.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: the path is empty", ErrBadPath)
	}
	parts := strings.Split(s, pathSep)
	p := make(Path, 0, len(parts))
	for i, part := range parts {
		if part == "" {
			return nil, fmt.Errorf("%w: segment %d of %q is empty", ErrBadPath, i+1, s)
		}
		seg := Segment{Name: part}
		if i > 0 {
			if j := strings.LastIndexByte(part, '#'); j >= 0 {
				seg = Segment{Name: part[:j], CallID: part[j+1:]}
				if seg.Name == "" {
					return nil, fmt.Errorf("%w: segment %d of %q has no agent name before its '#'", ErrBadPath, i+1, s)
				}
				if seg.CallID == "" {
					return nil, fmt.Errorf("%w: segment %d of %q has no call id after its '#'", ErrBadPath, i+1, s)
				}
			}
		}
		p = append(p, seg)
	}
	return p, nil
}
