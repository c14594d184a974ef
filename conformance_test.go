package deepagents_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/scenario"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

func loadScenario(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("testdata", "scenarios", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func replay(t *testing.T, name string) *scenario.Transcript {
	t.Helper()
	tr, err := loadScenario(t, name).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// Every checked-in scenario runs to the end and meets its own expectations.
func TestScenariosMeetTheirExpectations(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr := replay(t, name)
			if tr.Error != nil {
				t.Errorf("run error: %s", *tr.Error)
			}
			if len(tr.Checks) == 0 {
				t.Error("scenario has no expectations")
			}
			for _, c := range tr.Checks {
				switch {
				case c.NotChecked:
					t.Logf("not checked: %s (%s)", c.Name, c.Note)
				case !c.Pass:
					t.Errorf("check failed: %s (got %v)", c.Name, c.Got)
				}
			}
		})
	}
}

// Golden transcripts: the normalised transcript of every scenario under
// testdata/scenarios is checked in under testdata/golden and must not change
// unless on purpose (go test -run TestGoldenTranscripts -update ., and say so
// in the commit). A scenario without a golden fails here.
func TestGoldenTranscripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			tr := replay(t, name)
			tr.Normalize()
			got, err := json.MarshalIndent(tr, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("transcript differs from %s:\n%s", path, lineDiff(string(want), string(got)))
			}
		})
	}
}

// lineDiff shows the first differing lines of two texts.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < max(len(w), len(g)) && len(out) < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			out = append(out, "line "+itoa(i+1)+":\n  want "+wl+"\n  got  "+gl)
		}
	}
	return strings.Join(out, "\n")
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestScenarioAliasesAndWarnings(t *testing.T) {
	sc, err := scenario.Parse([]byte(`{"input": "x", "script": {"parent": [{"content": "hi"}]}, "surprise": 1,
		"agent": {"systemPrompt": "P", "subagents": [{"name": "s", "description": "d", "systemPrompt": "S", "responseFormat": {"type": "object", "title": "T", "properties": {"b": {"type": "string"}, "a": {"type": "string"}}}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Agent.SystemPrompt != "P" || sc.Agent.Subagents[0].SystemPrompt != "S" {
		t.Errorf("camelCase aliases not applied: %+v", sc.Agent)
	}
	if !strings.Contains(string(sc.Agent.Subagents[0].ResponseFormat), `"b":{"type":"string"},"a"`) &&
		!strings.Contains(string(sc.Agent.Subagents[0].ResponseFormat), `"b": {"type": "string"}, "a"`) {
		t.Errorf("the response format's key order must be kept: %s", sc.Agent.Subagents[0].ResponseFormat)
	}
	if len(sc.Warnings) != 1 || !strings.Contains(sc.Warnings[0], "surprise") {
		t.Errorf("warnings = %v", sc.Warnings)
	}
}

func TestAssemblyErrorsAreReportedInTheTranscript(t *testing.T) {
	sc, err := scenario.Parse([]byte(`{"input": "x", "script": {"parent": [{"content": "hi"}]},
		"agent": {"subagents": [{"name": "x", "description": "d", "mode": "fork", "skills": ["s"]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := sc.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := "SubAgent 'x' cannot set skills under mode='fork'; the parent's skills are inherited instead."
	if tr.Error == nil || *tr.Error != want {
		t.Errorf("error = %v, want %q", tr.Error, want)
	}
	if len(tr.Rounds) != 0 {
		t.Error("no model call may happen when assembly fails")
	}
	if !slices.Equal(tr.FinalStateKeys, []string{}) {
		t.Errorf("keys %v", tr.FinalStateKeys)
	}
}

// A scenario with crash points ends with the same parent messages and files
// as the same scenario without them (its uncrashed twin), and every crash
// point was reached.
func TestCrashScenariosEqualTheirUncrashedTwins(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		sc := loadScenario(t, name)
		if len(sc.CrashAfterEvents) == 0 {
			continue
		}
		found++
		t.Run(name, func(t *testing.T) {
			crashed, err := sc.Run(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if crashed.Crashes != len(sc.CrashAfterEvents) {
				t.Errorf("%d crashes happened, the scenario has %d crash points", crashed.Crashes, len(sc.CrashAfterEvents))
			}
			twinScenario := loadScenario(t, name)
			twinScenario.CrashAfterEvents = nil
			twin, err := twinScenario.Run(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if twin.Crashes != 0 {
				t.Fatalf("the twin crashed %d times", twin.Crashes)
			}
			if twin.Status != crashed.Status {
				t.Errorf("status %s, the twin's %s", crashed.Status, twin.Status)
			}
			a, _ := json.MarshalIndent(crashed.ParentMessages, "", "  ")
			b, _ := json.MarshalIndent(twin.ParentMessages, "", "  ")
			if !bytes.Equal(a, b) {
				t.Errorf("parent_messages differ from the uncrashed twin's:\n%s", lineDiff(string(b), string(a)))
			}
			if !maps.Equal(crashed.Files, twin.Files) {
				t.Errorf("files %v, the twin's %v", crashed.Files, twin.Files)
			}
			if len(crashed.Files) == 0 {
				t.Error("a crash scenario should end with files to compare")
			}
		})
	}
	if found < 2 {
		t.Errorf("%d crash scenarios; want at least 2", found)
	}
}
