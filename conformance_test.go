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

// The second turn runs on the same thread: its first model call sees the
// whole first turn, and it reads the file the first turn wrote.
func TestTurnsContinueTheThread(t *testing.T) {
	tr := replay(t, "turns")
	if len(tr.Rounds) != 5 {
		t.Fatalf("%d rounds, want 5", len(tr.Rounds))
	}
	second := tr.Rounds[2] // the second turn's first model call
	if want := []string{"user", "assistant", "tool", "assistant", "user"}; second.Round != 2 || !slices.Equal(second.Roles, want) {
		t.Errorf("round %d saw %v, want round 2 seeing %v", second.Round, second.Roles, want)
	}
	var read string
	for _, m := range tr.ParentMessages {
		if m.ToolCallID == "r1" {
			read = m.Content
		}
	}
	if !strings.Contains(read, "plan: ship the replay format") {
		t.Errorf("the second turn's read_file got %q; it must see the first turn's file", read)
	}
	if got := tr.Files["/notes.md"]; got != "plan: ship the replay format\nlunch: noodles\n" {
		t.Errorf("/notes.md = %q", got)
	}
	starts := 0
	for _, e := range tr.Events {
		if e.Type == "run.start" && e.TaskCall == "" {
			starts++
		}
	}
	if starts != 2 {
		t.Errorf("%d top-level runs, want one per turn (2)", starts)
	}
}

// A call inside a subagent that waits for approval stops the whole run with
// the child's path; the decision resumes the child where it stopped: no
// model call of the child or the parent is made twice.
func TestSubagentApprovalResumesInsideTheChild(t *testing.T) {
	tr := replay(t, "subagent-approval")
	if len(tr.Interrupts) != 1 || tr.Interrupts[0].Path != "parent / general-purpose#t1" || tr.Interrupts[0].CallID != "w2" {
		t.Fatalf("interrupts %+v, want w2 in parent / general-purpose#t1", tr.Interrupts)
	}
	seen := map[string]int{}
	for _, r := range tr.Rounds {
		seen[r.Who+"#"+r.Instance+"/"+itoa(r.Round)]++
	}
	want := map[string]int{"parent#/0": 1, "parent#/1": 1, "general-purpose#t1/0": 1, "general-purpose#t1/1": 1, "general-purpose#t1/2": 1}
	if !maps.Equal(seen, want) {
		t.Errorf("model calls by agent and round %v, want each once: %v", seen, want)
	}
	resumed := false
	for _, e := range tr.Events {
		if e.Type == "notice" && e.Agent.String() == "parent / general-purpose#t1" && e.Notice != nil && e.Notice.Source == "resume" {
			resumed = true
		}
	}
	if !resumed {
		t.Error("the child must be resumed (a resume notice of its own), not started again")
	}
	if tr.Files["/report.md"] != "report\n" || tr.Status != "ok" {
		t.Errorf("status %s, files %v", tr.Status, tr.Files)
	}
}

// Three gated calls of one step: the first stop decides two of them, the
// third waits on alone, and the second stop decides it. The model call that
// asked is made once.
func TestPartialDecisionsLeaveTheRestWaiting(t *testing.T) {
	tr := replay(t, "partial-decisions")
	var stops [][]string
	for _, in := range tr.Interrupts {
		for len(stops) < in.Stop {
			stops = append(stops, nil)
		}
		stops[in.Stop-1] = append(stops[in.Stop-1], in.CallID)
	}
	if len(stops) != 2 || !slices.Equal(stops[0], []string{"x", "y", "z"}) || !slices.Equal(stops[1], []string{"z"}) {
		t.Errorf("stops %v, want [[x y z] [z]]", stops)
	}
	if len(tr.Rounds) != 2 {
		t.Errorf("%d model calls, want 2", len(tr.Rounds))
	}
	want := map[string]string{"/x.md": "x\n", "/z.md": "z\n"}
	if !maps.Equal(tr.Files, want) {
		t.Errorf("files %v, want %v", tr.Files, want)
	}
}

// Approve runs the call, edit runs it with the person's arguments (and the
// model is told), reject does not run it and the model reads the reason.
func TestApproveEditReject(t *testing.T) {
	tr := replay(t, "approve-edit-reject")
	want := map[string]string{"/a.md": "alpha\n", "/b.md": "BRAVO, edited\n"}
	if !maps.Equal(tr.Files, want) {
		t.Errorf("files %v, want %v", tr.Files, want)
	}
	results := map[string]scenario.Message{}
	for _, m := range tr.ParentMessages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m
		}
	}
	if r := results["c2"]; !strings.Contains(r.Content, `changed the arguments`) || !strings.Contains(r.Content, `"BRAVO, edited\n"`) {
		t.Errorf("the edited call's result %q must say what ran", r.Content)
	}
	if r := results["c3"]; r.Status != "error" || !strings.Contains(r.Content, "no file named c") {
		t.Errorf("the rejected call's result %+v must be an error with the reason", r)
	}
}

// A call identical to one rejected earlier is answered as rejected without
// stopping again.
func TestRejectedCallIsNotAskedAgain(t *testing.T) {
	tr := replay(t, "reject-twice")
	if len(tr.Interrupts) != 1 || tr.Interrupts[0].CallID != "d1" {
		t.Errorf("interrupts %+v, want only d1", tr.Interrupts)
	}
	var second string
	for _, m := range tr.ParentMessages {
		if m.ToolCallID == "d2" {
			second = m.Content
		}
	}
	if !strings.Contains(second, "already rejected") {
		t.Errorf("the repeated call got %q", second)
	}
	if tr.Files["/draft.md"] != "draft\n" {
		t.Errorf("files %v: the draft must stay", tr.Files)
	}
}
