package agent_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
)

func TestPathTextForm(t *testing.T) {
	root := agent.RootPath("parent")
	child := root.Child("general-purpose", "call_1")
	grand := child.Child("researcher", "toolu_9")
	cases := []struct {
		name string
		p    agent.Path
		want string
	}{
		{"top", root, "parent"},
		{"child", child, "parent / general-purpose#call_1"},
		{"grandchild", grand, "parent / general-purpose#call_1 / researcher#toolu_9"},
		{"child without call id", root.Child("worker", ""), "parent / worker"},
		{"empty", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.p.String(); got != c.want {
				t.Errorf("String() = %q, want %q", got, c.want)
			}
			b, err := json.Marshal(c.p)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := json.Marshal(c.want); string(b) != string(want) {
				t.Errorf("JSON %s, want %s", b, want)
			}
			var back agent.Path
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("unmarshal %s: %v", b, err)
			}
			if !back.Equal(c.p) {
				t.Errorf("JSON round trip gave %#v, want %#v", back, c.p)
			}
		})
	}
	if len(root) != 1 {
		t.Errorf("Child changed its receiver: %#v", root)
	}
	if !grand.Parent().Equal(child) || child.Parent().Equal(nil) || root.Parent() != nil {
		t.Errorf("Parent: %v, %v, %v", grand.Parent(), child.Parent(), root.Parent())
	}
	if got := grand.Last(); got != (agent.Segment{Name: "researcher", CallID: "toolu_9"}) {
		t.Errorf("Last() = %+v", got)
	}
	if root.IsNested() || !child.IsNested() {
		t.Errorf("IsNested: top %v, child %v", root.IsNested(), child.IsNested())
	}
}

// Two children of one path share nothing: appending to one never writes
// into the other's segments.
func TestPathChildrenDoNotShareSegments(t *testing.T) {
	base := agent.RootPath("parent").Child("a", "c1")
	x := base.Child("x", "c2")
	y := base.Child("y", "c3")
	if x.String() != "parent / a#c1 / x#c2" || y.String() != "parent / a#c1 / y#c3" {
		t.Errorf("x %q, y %q", x, y)
	}
}

func TestParsePath(t *testing.T) {
	good := []struct {
		in   string
		want agent.Path
	}{
		{"parent", agent.Path{{Name: "parent"}}},
		{"parent / gp#call_1", agent.Path{{Name: "parent"}, {Name: "gp", CallID: "call_1"}}},
		{"parent / a#b#c1", agent.Path{{Name: "parent"}, {Name: "a#b", CallID: "c1"}}},
		{"top#x / w", agent.Path{{Name: "top#x"}, {Name: "w"}}},
		{"p / a#1 / b#2", agent.Path{{Name: "p"}, {Name: "a", CallID: "1"}, {Name: "b", CallID: "2"}}},
	}
	for _, c := range good {
		got, err := agent.ParsePath(c.in)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("ParsePath(%q) = %#v, %v; want %#v", c.in, got, err, c.want)
		}
	}
	bad := []struct{ in, says string }{
		{"", "empty"},
		{"parent / ", "segment 2"},
		{" / x#1", "segment 1"},
		{"parent / #c1", "no agent name"},
		{"parent / gp#", "no call id"},
	}
	for _, c := range bad {
		_, err := agent.ParsePath(c.in)
		if !errors.Is(err, agent.ErrBadPath) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParsePath(%q) error %v, want ErrBadPath saying %q", c.in, err, c.says)
		}
	}
	var p agent.Path
	if err := json.Unmarshal([]byte(`42`), &p); err == nil {
		t.Error("a number decoded as a path")
	}
}

// Whatever text ParsePath accepts, String gives it back unchanged; and a
// path built from segments that avoid the separators reads back equal.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"parent", "parent / general-purpose#call_1", "a / b#c / d#e", "x#y", "a / b#", "a /  / b", "a / / b", " / ", "#", "a / #", "é / ü#1"} {
		f.Add(s, "name", "id")
	}
	f.Fuzz(func(t *testing.T, s, name, id string) {
		if p, err := agent.ParsePath(s); err == nil {
			if got := p.String(); got != s {
				t.Fatalf("ParsePath(%q).String() = %q", s, got)
			}
			// JSON carries only valid UTF-8 (encoding/json replaces the
			// rest), so only such paths come back from JSON unchanged.
			b, _ := json.Marshal(p)
			var back agent.Path
			if err := json.Unmarshal(b, &back); err != nil || utf8.ValidString(s) && !back.Equal(p) {
				t.Fatalf("JSON round trip of %q: %#v, %v", s, back, err)
			}
		} else if !errors.Is(err, agent.ErrBadPath) {
			t.Fatalf("error %v does not wrap ErrBadPath", err)
		}
		if name == "" || id == "" || strings.Contains(name, " / ") || strings.Contains(id, " / ") ||
			strings.Contains(id, "#") || strings.HasSuffix(name, " ") || strings.HasPrefix(id, " /") {
			return
		}
		built := agent.RootPath("parent").Child(name, id)
		back, err := agent.ParsePath(built.String())
		if err != nil || !back.Equal(built) {
			t.Fatalf("%#v read back as %#v, %v", built, back, err)
		}
	})
}
