package tokens

import (
	"encoding/json"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
)

func TestSpecMemo(t *testing.T) {
	var m specMemo[int]
	a := llm.ToolSpec{Name: "ls", Description: "lists", Parameters: json.RawMessage(`{"type":"object"}`)}
	b := a
	b.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
	c := a
	c.Description = "lists files"
	m.put(a, 1)
	m.put(b, 2)
	m.put(c, 3)
	m.put(a, 9) // already there: kept
	for _, tc := range []struct {
		spec llm.ToolSpec
		want int
	}{{a, 1}, {b, 2}, {c, 3}} {
		if v, ok := m.get(tc.spec); !ok || v != tc.want {
			t.Errorf("get(%s %q %s) = %d, %v; want %d", tc.spec.Name, tc.spec.Description, tc.spec.Parameters, v, ok, tc.want)
		}
	}
	// The memo keeps its own copy of the parameters.
	params := []byte(`{"type":"string"}`)
	d := llm.ToolSpec{Name: "d", Parameters: params}
	m.put(d, 4)
	params[9] = 'X'
	if _, ok := m.get(d); ok {
		t.Error("a definition changed in place after it was remembered is found")
	}
	d.Parameters = json.RawMessage(`{"type":"string"}`)
	if v, ok := m.get(d); !ok || v != 4 {
		t.Errorf("get(d) = %d, %v", v, ok)
	}
	// Two definitions under one hash are told apart by their text.
	m.m[specHash(a)] = append(m.m[specHash(a)], specEntry[int]{name: "other", v: 7})
	if v, _ := m.get(a); v != 1 {
		t.Errorf("get(a) = %d after a colliding entry", v)
	}
}

func TestSpecMemoBounded(t *testing.T) {
	var m specMemo[int]
	for i := range maxSpecMemo + 10 {
		m.put(llm.ToolSpec{Name: "t", Parameters: json.RawMessage(`{"n":` + itoa(i) + `}`)}, i)
	}
	if m.n > maxSpecMemo {
		t.Errorf("the memo holds %d definitions; at most %d", m.n, maxSpecMemo)
	}
	last := llm.ToolSpec{Name: "t", Parameters: json.RawMessage(`{"n":` + itoa(maxSpecMemo+9) + `}`)}
	if v, ok := m.get(last); !ok || v != maxSpecMemo+9 {
		t.Errorf("the newest definition: %d, %v", v, ok)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// A remembered definition is found without allocating: the same tools are
// looked up for every model request.
func TestToolCostLookupAllocatesNothing(t *testing.T) {
	spec := llm.ToolSpec{Name: "write_file", Description: "Writes a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)}
	want := EstimateTool(spec)
	ToolO200k(spec)
	allocs := testing.AllocsPerRun(100, func() {
		if EstimateTool(spec) != want {
			t.Fatal("estimate changed")
		}
		ToolO200k(spec)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per lookup", allocs)
	}
}
