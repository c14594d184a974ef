package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/google/go-cmp/cmp"
)

func effort(e string) *llm.ReasoningConfig {
	return &llm.ReasoningConfig{Effort: llm.ReasoningEffort(e)}
}
func budget(n int) *llm.ReasoningConfig { return &llm.ReasoningConfig{BudgetTokens: n} }

func TestParseReasoning(t *testing.T) {
	tests := []struct {
		in      string
		want    *llm.ReasoningConfig
		wantErr string
	}{
		{in: "low", want: effort("low")},
		{in: "medium", want: effort("medium")},
		{in: "high", want: effort("high")},
		{in: " High ", want: effort("high")},
		{in: "8000", want: budget(8000)},
		{in: "1", want: budget(1)},
		{in: "200000", want: budget(200000)},
		{in: "200001", wantErr: "a budget of 200001 thinking tokens is too large: at most 200000"},
		{in: "0", wantErr: "a budget of 0 thinking tokens is too small: at least 1"},
		{in: "-5", wantErr: "a budget of -5 thinking tokens is too small: at least 1"},
		{in: "99999999999999999999", wantErr: "a budget of 99999999999999999999 thinking tokens is too large: at most 200000"},
		{in: "-99999999999999999999", wantErr: "a budget of -99999999999999999999 thinking tokens is too small: at least 1"},
		{in: "max", wantErr: `want an effort ("low", "medium" or "high") or a number of thinking tokens (1 to 200000), got "max"`},
		{in: "", wantErr: `want an effort ("low", "medium" or "high") or a number of thinking tokens (1 to 200000), got ""`},
		{in: "8k", wantErr: `want an effort ("low", "medium" or "high") or a number of thinking tokens (1 to 200000), got "8k"`},
		{in: "1.5", wantErr: `want an effort ("low", "medium" or "high") or a number of thinking tokens (1 to 200000), got "1.5"`},
	}
	for _, tt := range tests {
		got, err := ParseReasoning(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseReasoning(%q) = %+v, %v; want error %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, tt.want) {
			t.Errorf("ParseReasoning(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestConfigReasoning(t *testing.T) {
	tests := []struct {
		name, src string
		want      *llm.ReasoningConfig
	}{
		{"not set", "max_steps = 3\n", nil},
		{"effort", "reasoning = \"high\"\n", effort("high")},
		{"effort in capitals", "reasoning = \"LOW\"\n", effort("low")},
		{"budget", "reasoning = 8000\n", budget(8000)},
		{"budget with underscores", "reasoning = 16_000\n", budget(16000)},
		{"budget as a string", "reasoning = \"4096\"\n", budget(4096)},
		{"table with effort", "[reasoning]\neffort = \"medium\"\n", effort("medium")},
		{"table with budget", "[reasoning]\nbudget_tokens = 8000\n", budget(8000)},
		{"inline table", "reasoning = { budget_tokens = 1024 }\n", budget(1024)},
		{"dotted key", "reasoning.effort = \"low\"\n", effort("low")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("deepagents.toml", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(c.Reasoning, tt.want) {
				t.Errorf("Reasoning = %+v, want %+v", c.Reasoning, tt.want)
			}
		})
	}
}

func TestConfigReasoningErrors(t *testing.T) {
	const path = "deepagents.toml"
	tests := []parseErrorCase{
		{"unknown effort", "model = \"a:b\"\nreasoning = \"maximum\"\n",
			`:2: reasoning: want an effort ("low", "medium" or "high") or a number of thinking tokens (1 to 200000), got "maximum"`},
		{"zero budget", "reasoning = 0\n", `:1: reasoning: a budget of 0 thinking tokens is too small: at least 1`},
		{"negative budget", "reasoning = -100\n", `:1: reasoning: a budget of -100 thinking tokens is too small: at least 1`},
		{"budget too large", "\nreasoning = 1_000_000\n", `:2: reasoning: a budget of 1000000 thinking tokens is too large: at most 200000`},
		{"float", "reasoning = 1.5\n",
			`:1: reasoning must be an effort ("low", "medium" or "high"), a number of thinking tokens, or a table with effort or budget_tokens, got a float`},
		{"boolean", "reasoning = true\n",
			`:1: reasoning must be an effort ("low", "medium" or "high"), a number of thinking tokens, or a table with effort or budget_tokens, got a boolean`},
		{"array", "reasoning = [\"high\"]\n",
			`:1: reasoning must be an effort ("low", "medium" or "high"), a number of thinking tokens, or a table with effort or budget_tokens, got an array`},
		{"both in a table", "[reasoning]\neffort = \"high\"\nbudget_tokens = 8000\n",
			`:3: reasoning sets both effort and budget_tokens: set one of them`},
		{"both inline", "reasoning = { effort = \"high\", budget_tokens = 8000 }\n",
			`:1: reasoning sets both effort and budget_tokens: set one of them`},
		{"empty table", "max_steps = 2\n[reasoning]\n", `:2: reasoning is an empty table: set effort or budget_tokens`},
		{"bad effort in a table", "[reasoning]\neffort = \"extreme\"\n", `:2: reasoning.effort: want "low", "medium" or "high", got "extreme"`},
		{"number as the effort", "[reasoning]\neffort = \"8000\"\n",
			`:2: reasoning.effort: want "low", "medium" or "high", got "8000"; a number of thinking tokens goes in budget_tokens`},
		{"effort not a string", "[reasoning]\neffort = 3\n", `:2: reasoning.effort: want "low", "medium" or "high", got an integer`},
		{"budget not a number", "[reasoning]\nbudget_tokens = \"8000\"\n", `:2: reasoning.budget_tokens must be a whole number of thinking tokens, got a string`},
		{"budget too large in a table", "[reasoning]\nbudget_tokens = 300000\n",
			`:2: reasoning.budget_tokens: a budget of 300000 thinking tokens is too large: at most 200000`},
		{"unknown key in the table", "[reasoning]\nefort = \"high\"\n", `:2: unknown key "reasoning.efort" (did you mean "effort"?)`},
		{"unknown key, no suggestion", "[reasoning]\nsummary = \"auto\"\n", `:2: unknown key "reasoning.summary" (known keys: effort, budget_tokens)`},
		{"typo of the key", "reasonning = \"high\"\n", `:1: unknown key "reasonning" (did you mean "reasoning"?)`},
		{"with other errors, in line order", "reasoning = \"x\"\nmax_steps = 0\n",
			":1: reasoning: want an effort (\"low\", \"medium\" or \"high\") or a number of thinking tokens (1 to 200000), got \"x\"\n" +
				":2: max_steps must be at least 1, got 0"},
	}
	checkParseErrors(t, path, tests)
}

// The project file's reasoning replaces the user's whole: an effort over a
// budget does not leave both set.
func TestLoadReasoningPrecedence(t *testing.T) {
	tests := []struct {
		name, user, project string
		want                *llm.ReasoningConfig
	}{
		{"user only", "reasoning = 8000\n", "max_steps = 3\n", budget(8000)},
		{"project only", "", "reasoning = \"low\"\n", effort("low")},
		{"project over user", "reasoning = 8000\n", "[reasoning]\neffort = \"high\"\n", effort("high")},
		{"project budget over user effort", "reasoning = \"high\"\n", "reasoning = 2048\n", budget(2048)},
		{"neither", "max_steps = 3\n", "max_parallel = 2\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			projectDir, homeDir := setup(t, tt.user, tt.project)
			c, err := Load(projectDir, homeDir)
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(c.Reasoning, tt.want) {
				t.Errorf("Reasoning = %+v, want %+v", c.Reasoning, tt.want)
			}
		})
	}
	// An error in the user's file names that file and line.
	projectDir, homeDir := setup(t, "\n\nreasoning = \"hgih\"\n", "reasoning = \"high\"\n")
	_, err := Load(projectDir, homeDir)
	want := filepath.Join(homeDir, ".deepagents", "config.toml") + `:3: reasoning: want an effort ("low", "medium" or "high") or a number of thinking tokens (1 to 200000), got "hgih"`
	if err == nil || err.Error() != want {
		t.Errorf("error\n got: %v\nwant: %s", err, want)
	}
}

func TestAgentFileReasoning(t *testing.T) {
	tests := []struct {
		name, front string
		want        *llm.ReasoningConfig
	}{
		{"not set", "", nil},
		{"effort", "reasoning: high\n", effort("high")},
		{"effort quoted", "reasoning: \"medium\"\n", effort("medium")},
		{"budget", "reasoning: 8000\n", budget(8000)},
		{"budget quoted", "reasoning: \"8000\"\n", budget(8000)},
		{"budget in hex", "reasoning: 0x400\n", budget(1024)},
		{"flow mapping with effort", "reasoning: {effort: low}\n", effort("low")},
		{"block mapping with budget", "reasoning:\n  budget_tokens: 4096\n", budget(4096)},
		{"for a fork", "mode: fork\nreasoning: low\n", effort("low")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAgentFile(agentPath, []byte("---\ndescription: d\n"+tt.front+"---\nBody.\n"))
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(a.Reasoning, tt.want) {
				t.Errorf("Reasoning = %+v, want %+v", a.Reasoning, tt.want)
			}
			// The spec gets its own copy.
			s := a.Spec()
			if !cmp.Equal(s.Reasoning, tt.want) {
				t.Errorf("Spec().Reasoning = %+v, want %+v", s.Reasoning, tt.want)
			}
			if s.Reasoning != nil && s.Reasoning == a.Reasoning {
				t.Error("Spec shares the agent file's ReasoningConfig")
			}
		})
	}
	a, err := ParseAgentFile("agents/thinker.md", []byte("---\ndescription: Thinks.\nreasoning: {budget_tokens: 3000}\n---\nThink.\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := subagent.Spec{Name: "thinker", Description: "Thinks.", SystemPrompt: "Think.", Mode: subagent.Isolated, Reasoning: budget(3000)}
	if diff := cmp.Diff(want, a.Spec()); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestAgentFileReasoningErrors(t *testing.T) {
	shape := `an effort ("low", "medium" or "high"), a number of thinking tokens, or a table with effort or budget_tokens`
	tests := []struct {
		name, src, want string
	}{
		{"unknown effort", "---\ndescription: d\nreasoning: extreme\n---\n",
			`:3: reasoning: want an effort ("low", "medium" or "high") or a number of thinking tokens (1 to 200000), got "extreme"`},
		{"zero", "---\ndescription: d\nreasoning: 0\n---\n", `:3: reasoning: a budget of 0 thinking tokens is too small: at least 1`},
		{"too large", "---\ndescription: d\nreasoning: 500000\n---\n", `:3: reasoning: a budget of 500000 thinking tokens is too large: at most 200000`},
		{"no value", "---\ndescription: d\nreasoning:\n---\n",
			`:3: reasoning has no value: write an effort (low, medium or high) or a number of thinking tokens`},
		{"float", "---\ndescription: d\nreasoning: 1.5\n---\n", `:3: reasoning must be ` + shape + `, got the number 1.5`},
		{"boolean", "---\ndescription: d\nreasoning: true\n---\n", `:3: reasoning must be ` + shape + `, got the boolean true`},
		{"list", "---\ndescription: d\nreasoning: [high]\n---\n", `:3: reasoning must be ` + shape + `, got a list`},
		{"both", "---\ndescription: d\nreasoning:\n  effort: high\n  budget_tokens: 8000\n---\n",
			`:5: reasoning sets both effort and budget_tokens: set one of them`},
		{"empty mapping", "---\ndescription: d\nreasoning: {}\n---\n", `:3: reasoning is an empty mapping: set effort or budget_tokens`},
		{"bad effort in a mapping", "---\ndescription: d\nreasoning:\n  effort: max\n---\n", `:4: reasoning.effort: want "low", "medium" or "high", got "max"`},
		{"effort not a string", "---\ndescription: d\nreasoning: {effort: 5}\n---\n", `:3: reasoning.effort: want "low", "medium" or "high", got the integer 5`},
		{"budget a string", "---\ndescription: d\nreasoning:\n  budget_tokens: lots\n---\n",
			`:4: reasoning.budget_tokens must be a whole number of thinking tokens, got the string "lots"`},
		{"budget negative", "---\ndescription: d\nreasoning:\n  budget_tokens: -1\n---\n",
			`:4: reasoning.budget_tokens: a budget of -1 thinking tokens is too small: at least 1`},
		{"unknown key in a mapping", "---\ndescription: d\nreasoning:\n  budget: 100\n---\n", `:4: unknown key "reasoning.budget" (known keys: effort, budget_tokens)`},
		{"key set twice", "---\ndescription: d\nreasoning:\n  effort: low\n  effort: high\n---\n", `:5: reasoning.effort is set twice`},
		{"key not a word", "---\ndescription: d\nreasoning:\n  [a]: low\n---\n", `:4: reasoning: keys must be words, got a list`},
		{"with other errors", "---\ndescription: d\nreasoning: x\nmax_steps: 0\n---\n",
			":3: reasoning: want an effort (\"low\", \"medium\" or \"high\") or a number of thinking tokens (1 to 200000), got \"x\"\n" +
				":4: max_steps must be at least 1, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAgentFile(agentPath, []byte(tt.src))
			if err == nil {
				t.Fatalf("no error; parsed %+v", a)
			}
			want := agentPath + strings.ReplaceAll(tt.want, "\n", "\n"+agentPath)
			if got := err.Error(); got != want {
				t.Errorf("error\n got: %s\nwant: %s", got, want)
			}
			if n := len(FileErrors(err)); n != strings.Count(tt.want, "\n")+1 {
				t.Errorf("FileErrors: %d, want %d", n, strings.Count(tt.want, "\n")+1)
			}
		})
	}
}
