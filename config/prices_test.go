package config

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/pricing"
)

func TestCostSettings(t *testing.T) {
	c, err := Parse("deepagents.toml", []byte(`max_cost = 2.5

[prices."openai:gpt-4o"]
input = 1
cache_read = 0.5

[prices."Local:qwen3"]
input = 0.1
output = 0.2
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxCost != 2.5 || len(c.Prices) != 2 || *c.Prices["openai:gpt-4o"].Input != 1 || c.Prices["openai:gpt-4o"].Output != nil {
		t.Fatalf("%v %+v", c.MaxCost, c.Prices)
	}
	tab := c.Pricing()
	if p, key, ok := tab.Lookup("gpt-4o-2024-08-06"); !ok || p.Input != 1 || p.Output != 10 || p.CacheRead != 0.5 || key != "openai:gpt-4o" {
		t.Errorf("gpt-4o %+v %q", p, key)
	}
	if p, _, ok := tab.Lookup("qwen3"); !ok || p.Output != 0.2 {
		t.Errorf("qwen3 %+v", p)
	}
	if c, _ := Parse("x.toml", []byte(`max_cost = 3`)); c.MaxCost != 3 {
		t.Errorf("an integer max_cost: %v", c.MaxCost)
	}

	for _, bad := range []struct{ toml, want string }{
		{`max_cost = 0`, `x.toml:1: max_cost must be more than 0 dollars`},
		{`max_cost = "5"`, `x.toml:1: max_cost must be a number of US dollars`},
		{`max_cost = 1e9`, `x.toml:1: max_cost is too large`},
		{"prices = 1", `x.toml:1: prices must be a table`},
		{"[prices.gpt]\ninput = 1\noutput = 1", `x.toml:1: prices."gpt" must be "provider:model"`},
		{"[prices.\"a:b\"]\ninput = 1\n", `x.toml:1: prices."a:b": model "a:b": a model the price table does not know needs both input and output prices`},
		{"[prices.\"openai:gpt-4o\"]\n\ninput = -1\n", `x.toml:3: prices.openai:gpt-4o.input must be a price in dollars per million tokens from 0 to 10000, got -1`},
		{"[prices.\"openai:gpt-4o\"]\noutput = \"1\"\n", `x.toml:2: prices.openai:gpt-4o.output must be a price in US dollars per million tokens, got a string`},
		{"[prices.\"openai:gpt-4o\"]\nouput = 1\n", `x.toml:2: unknown key "prices.openai:gpt-4o.ouput" (did you mean "output"?)`},
		{"[prices.\"openai:gpt-4o\"]\ninput = nan\n", `x.toml:2: prices.openai:gpt-4o.input must be a price`},
	} {
		_, err := Parse("x.toml", []byte(bad.toml))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.toml, err, bad.want)
		}
	}
}

// A project file may lower the user's budget and raise prices, never the
// reverse: both would let a project spend more than its user allowed.
func TestProjectCannotLoosenCost(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write := func(path, s string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".deepagents", "config.toml"), "max_cost = 5\n")
	write(filepath.Join(proj, "deepagents.toml"), "max_cost = 50\n[prices.\"openai:gpt-4o\"]\ninput = 0\noutput = 20\n")
	c, err := Load(proj, home)
	if err != nil {
		t.Fatal(err)
	}
	p, _, _ := c.Pricing().Lookup("gpt-4o")
	if c.MaxCost != 5 || p.Input != 2.5 || p.Output != 20 {
		t.Errorf("max_cost %v, gpt-4o %+v: want 5, input kept at 2.5, output raised to 20", c.MaxCost, p)
	}
	write(filepath.Join(proj, "deepagents.toml"), "max_cost = 1\n")
	if c, err = Load(proj, home); err != nil || c.MaxCost != 1 {
		t.Errorf("a lower budget: %v %v", c.MaxCost, err)
	}
}

// The prices decoder: every accepted table has prices in range, and every
// rejection is a FileError with a line in the file.
func FuzzParsePrices(f *testing.F) {
	f.Add([]byte("max_cost = 2.5\n[prices.\"openai:gpt-4o\"]\ninput = 1\ncache_read = 0.5\n"))
	f.Add([]byte("[prices.\"local:qwen3\"]\ninput = 0.1\noutput = 0.2\nreasoning = 0.3\ncache_write = 0\n"))
	f.Add([]byte("[prices]\n\"a:b\" = { input = 1, output = 2 }\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("deepagents.toml", data)
		if err != nil {
			checkErrors(t, err, lineCount(data), "deepagents.toml")
			return
		}
		if math.IsNaN(c.MaxCost) || c.MaxCost < 0 || c.MaxCost > maxCostLimit {
			t.Fatalf("max_cost %v", c.MaxCost)
		}
		tab := c.Pricing()
		for key := range c.Prices {
			p, _, ok := tab.Lookup(key)
			if !ok {
				t.Fatalf("%q has no price", key)
			}
			for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite, p.Reasoning} {
				if math.IsNaN(v) || v < 0 {
					t.Fatalf("%q: %+v", key, p)
				}
			}
		}
	})
}

// A project price table the user's table cannot take is dropped on its
// own: it never costs the user's other prices, and a project cannot price
// a model the user's table leaves unpriced.
func TestProjectPricesKeepUserPrices(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write := func(path, s string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".deepagents", "config.toml"),
		"max_cost = 1.0\n[prices.\"local:qwen3\"]\ninput = 0.2\noutput = 0.6\n")
	write(filepath.Join(proj, "deepagents.toml"),
		"[prices.\"openai:gpt-5-mini-2025-08-07\"]\ninput = 0\noutput = 100\n"+
			"[prices.\"local:unpriced\"]\ninput = 1\noutput = 2\n")
	c, err := Load(proj, home)
	if err != nil {
		t.Fatal(err)
	}
	tab := c.Pricing()
	if p, _, ok := tab.Lookup("local:qwen3"); !ok || p.Input != 0.2 || p.Output != 0.6 {
		t.Errorf("local:qwen3 = %+v %v, want the user's 0.2/0.6", p, ok)
	}
	if _, _, ok := tab.Lookup("local:unpriced"); ok {
		t.Error("a project priced a model the user's table does not price")
	}
	if p, _, ok := tab.Lookup("openai:gpt-5-mini-2025-08-07"); !ok || p.Input != 0.25 {
		t.Errorf("gpt-5-mini snapshot = %+v %v, want the list input price 0.25", p, ok)
	}
}

// Pricing applies each table on its own: one the shipped table cannot
// take leaves the others in force.
func TestPricingSkipsOnlyBadTable(t *testing.T) {
	in, out := 0.2, 0.6
	c := &Config{Prices: map[string]pricing.Override{
		"local:qwen3":      {Input: &in, Output: &out},
		"local:onlyoutput": {Output: &out},
	}}
	if p, _, ok := c.Pricing().Lookup("local:qwen3"); !ok || p.Input != 0.2 {
		t.Errorf("local:qwen3 = %+v %v", p, ok)
	}
}
