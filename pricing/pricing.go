// Package pricing is the table of what model calls cost: per model family,
// the price of a million input, output, cache-read, cache-write and
// reasoning tokens in US dollars.
//
// The shipped table (prices.json, embedded) holds the providers' public
// list prices as of its date (Default().AsOf); configuration overrides it
// per model ([prices."provider:model"] tables, package config). A model
// name is matched exactly, or as a known name followed by a snapshot
// suffix only ("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06",
// "claude-sonnet-4@20250514", "claude-3-5-haiku-latest",
// "gemini-2.0-flash-001"), so a snapshot is priced as its family but a
// different model whose name merely starts with a known one ("gpt-5.1",
// "o3-deep-research") is not priced as it. A model the table does not
// know has no price: its cost is unknown, never zero. Long-context
// surcharges (a higher price past some prompt length) are not modelled.
package pricing

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
)

//go:embed prices.json
var shipped []byte

// MaxTableBytes caps a price table read by Parse.
const MaxTableBytes = 1 << 20

// Price is what a million tokens of each kind cost, in US dollars.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheRead is the price of input tokens read from the provider's
	// prompt cache; CacheWrite of those written to it.
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
	// Reasoning is the price of the output tokens the model spent thinking.
	Reasoning float64 `json:"reasoning"`
}

// Cost is what one call with usage u costs at p. Input tokens include the
// cached and cache-written ones, and output tokens the reasoning ones, as
// llm.Usage counts them.
func (p Price) Cost(u llm.Usage) float64 {
	cached, written := max(u.CachedInputTokens, 0), max(u.CacheWriteTokens, 0)
	plain := max(u.InputTokens-cached-written, 0)
	reasoning := min(max(u.ReasoningTokens, 0), max(u.OutputTokens, 0))
	out := max(u.OutputTokens-reasoning, 0)
	return (float64(plain)*p.Input + float64(cached)*p.CacheRead + float64(written)*p.CacheWrite +
		float64(out)*p.Output + float64(reasoning)*p.Reasoning) / 1e6
}

// Override is a configured price: each field set replaces the table's (a
// model the table does not know needs Input and Output).
type Override struct {
	Input      *float64 `json:"input,omitempty"`
	Output     *float64 `json:"output,omitempty"`
	CacheRead  *float64 `json:"cache_read,omitempty"`
	CacheWrite *float64 `json:"cache_write,omitempty"`
	Reasoning  *float64 `json:"reasoning,omitempty"`
}

// entry is one priced model family.
type entry struct {
	key    string // "provider:model" as written
	prefix string // the model part
	price  Price
	// set says which fields were given (the others take their defaults).
	set fields
}

type fields struct{ cacheRead, cacheWrite, reasoning bool }

// Table prices models. The zero value knows none.
type Table struct {
	// AsOf is the date of the shipped list prices.
	AsOf    string
	entries []entry
}

var defaultTable = func() *Table {
	t, err := Parse(shipped)
	if err != nil {
		panic("pricing: the shipped table: " + err.Error())
	}
	return t
}()

// Default returns the shipped table.
func Default() *Table { return defaultTable }

// file is the JSON form of a table.
type file struct {
	AsOf   string                     `json:"as_of"`
	About  string                     `json:"about"`
	Models map[string]json.RawMessage `json:"models"`
}

// Parse reads a table in the shipped JSON form: {"as_of": DATE, "models":
// {"provider:model": {"input": N, "output": N, ...}}}, prices in dollars
// per million tokens.
func Parse(data []byte) (*Table, error) {
	if len(data) > MaxTableBytes {
		return nil, fmt.Errorf("price table: %d bytes, more than the %d allowed", len(data), MaxTableBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	t := &Table{AsOf: f.AsOf}
	for _, key := range slices.Sorted(maps.Keys(f.Models)) {
		var o Override
		d := json.NewDecoder(bytes.NewReader(f.Models[key]))
		d.DisallowUnknownFields()
		if err := d.Decode(&o); err != nil {
			return nil, fmt.Errorf("price table: model %q: %w", key, err)
		}
		if err := t.set(key, o); err != nil {
			return nil, fmt.Errorf("price table: %w", err)
		}
	}
	return t, nil
}

// With returns a copy of t with the overrides, by "provider:model" key: a
// key naming a model of the table changes the fields set, another adds the
// model.
func (t *Table) With(overrides map[string]Override) (*Table, error) {
	c := &Table{}
	if t != nil {
		c.AsOf, c.entries = t.AsOf, slices.Clone(t.entries)
	}
	for _, key := range slices.Sorted(maps.Keys(overrides)) {
		if err := c.set(key, overrides[key]); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// CheckKey says what is wrong with a "provider:model" key, or returns "".
func CheckKey(key string) string {
	_, _, ok := strings.Cut(key, ":")
	switch {
	case !ok:
		return `must be "provider:model" (e.g. "openai:gpt-4.1")`
	case normalise(key) == "":
		return `names no model after the ":"`
	}
	return ""
}

// Check says what is wrong with a price, or returns "": every price must
// be a number from 0 to 10,000 dollars per million tokens.
func Check(v float64) string {
	if math.IsNaN(v) || v < 0 || v > 10_000 {
		return fmt.Sprintf("must be a price in dollars per million tokens from 0 to 10000, got %v", v)
	}
	return ""
}

// set adds or changes the entry of key.
func (t *Table) set(key string, o Override) error {
	if msg := CheckKey(key); msg != "" {
		return fmt.Errorf("model %q %s", key, msg)
	}
	for _, v := range []*float64{o.Input, o.Output, o.CacheRead, o.CacheWrite, o.Reasoning} {
		if v != nil {
			if msg := Check(*v); msg != "" {
				return fmt.Errorf("model %q: %s", key, msg)
			}
		}
	}
	prefix := normalise(key)
	i := slices.IndexFunc(t.entries, func(e entry) bool { return e.prefix == prefix })
	if i < 0 {
		if o.Input == nil || o.Output == nil {
			return fmt.Errorf("model %q: a model the price table does not know needs both input and output prices", key)
		}
		t.entries = append(t.entries, entry{key: key, prefix: prefix})
		i = len(t.entries) - 1
	}
	e := &t.entries[i]
	if o.Input != nil {
		e.price.Input = *o.Input
	}
	if o.Output != nil {
		e.price.Output = *o.Output
	}
	if o.CacheRead != nil {
		e.price.CacheRead, e.set.cacheRead = *o.CacheRead, true
	}
	if o.CacheWrite != nil {
		e.price.CacheWrite, e.set.cacheWrite = *o.CacheWrite, true
	}
	if o.Reasoning != nil {
		e.price.Reasoning, e.set.reasoning = *o.Reasoning, true
	}
	if !e.set.cacheRead {
		e.price.CacheRead = e.price.Input
	}
	if !e.set.cacheWrite {
		e.price.CacheWrite = e.price.Input
	}
	if !e.set.reasoning {
		e.price.Reasoning = e.price.Output
	}
	return nil
}

// normalise is a table key's model part as matched: the provider
// ("openai:", but not the ":0" of Bedrock's "anthropic.claude-…-v1:0"), a
// resource path ("models/", "anthropic/") and case dropped.
func normalise(key string) string {
	if provider, m, ok := strings.Cut(key, ":"); ok && !strings.ContainsAny(provider, "./") {
		key = m
	}
	return bare(key)
}

// bare is a model name without its resource path and case.
func bare(model string) string {
	model = strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	return model
}

// snapshot is what may follow a known model name in a name priced as it:
// a date (-2025-08-07, -20250929, Vertex's @20250514), an alias
// (-latest) or Gemini's version number (-001). Anything else names
// another model, which may cost more.
var snapshot = regexp.MustCompile(`^(-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-latest|-\d{3})$`)

// Lookup returns the price of model and the table's key it was matched
// by: the longest known name that is the whole name or is followed only
// by a snapshot suffix. The name may come with a provider ("openai:gpt-4o",
// "ollama:qwen3:8b") or without one ("qwen3:8b", as a response names its
// model): both readings are tried, and the longer match wins.
func (t *Table) Lookup(model string) (Price, string, bool) {
	if t == nil {
		return Price{}, "", false
	}
	best := -1
	var found entry
	for _, name := range []string{normalise(model), bare(model)} {
		for _, e := range t.entries {
			if len(e.prefix) <= best || !strings.HasPrefix(name, e.prefix) {
				continue
			}
			if rest := name[len(e.prefix):]; rest != "" && !snapshot.MatchString(rest) {
				continue
			}
			best, found = len(e.prefix), e
		}
	}
	return found.price, found.key, best >= 0
}

// Price is the cost of one call of model with usage u; ok is false when
// the table has no price for the model (budget.Pricer).
func (t *Table) Price(model string, u llm.Usage) (float64, bool) {
	p, _, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return p.Cost(u), true
}

// Keys lists the table's "provider:model" keys, sorted.
func (t *Table) Keys() []string {
	if t == nil {
		return nil
	}
	keys := make([]string, len(t.entries))
	for i, e := range t.entries {
		keys[i] = e.key
	}
	slices.Sort(keys)
	return keys
}
