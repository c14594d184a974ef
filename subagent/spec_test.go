package subagent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type Findings struct {
	Findings   string  `json:"findings"`
	Confidence float64 `json:"confidence"`
}

func TestResolveFormatKinds(t *testing.T) {
	doc := `{"title":"Report Card","type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
	var asMap map[string]any
	if err := json.Unmarshal([]byte(doc), &asMap); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   any
		tool string
	}{
		{"struct type", As[Findings](), "Findings"},
		{"struct value", Findings{}, "Findings"},
		{"struct pointer", &Findings{}, "Findings"},
		{"raw document", json.RawMessage(doc), "Report_Card"},
		{"bytes", []byte(doc), "Report_Card"},
		{"map", asMap, "Report_Card"},
		{"schema", &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"x": {Type: "string"}}}, "StructuredResponse"},
	}
	for _, c := range cases {
		rf, err := ResolveFormat(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if rf.Name != c.tool || !json.Valid(rf.Schema) || rf.Description == "" {
			t.Errorf("%s: %+v", c.name, rf)
		}
	}
	for in, want := range map[any]string{"Findings": "Unsupported schema type: string", 3.5: "Unsupported schema type: float64", true: "Unsupported schema type: bool"} {
		_, err := ResolveFormat(in)
		var ce *ConfigError
		if !errors.As(err, &ce) || err.Error() != want {
			t.Errorf("ResolveFormat(%v) = %v, want %q", in, err, want)
		}
	}
	if _, err := ResolveFormat(json.RawMessage(`{"type":"array"}`)); err == nil || !strings.Contains(err.Error(), "object schema") {
		t.Errorf("array schema accepted: %v", err)
	}
	if rf, err := ResolveFormat(nil); rf != nil || err != nil {
		t.Error("nil format must mean none")
	}
}

func TestDescriptionListsInOrder(t *testing.T) {
	d := Description([]Spec{GeneralPurpose(), {Name: "b", Description: "Bee."}, {Name: "f", Description: "Fork.", Mode: Fork}})
	i, j, k := strings.Index(d, "- general-purpose: "), strings.Index(d, "- b: Bee."), strings.Index(d, "- f: Fork. (fork: inherits your full conversation and system prompt, so the brief can be short)")
	if i < 0 || j < i || k < j {
		t.Errorf("listing order wrong:\n%s", d)
	}
	for _, must := range []string{"several task calls in one message", "sees only your description", "The user never sees it"} {
		if !strings.Contains(d, must) {
			t.Errorf("template lacks %q", must)
		}
	}
}
