package tokens

import "strings"

// Profile is what the harness needs to know about a model to manage its
// context: how many input tokens it takes, how many it may answer with, and
// whether its provider caches prompt prefixes.
type Profile struct {
	// Window is the model's context window in tokens; 0 means unknown.
	Window    int  `json:"context_window,omitempty" toml:"context_window"`
	MaxOutput int  `json:"max_output,omitempty" toml:"max_output"`
	Caches    bool `json:"caches,omitempty" toml:"caches"`
}

type profileEntry struct {
	prefix string
	p      Profile
}

// profiles are the models the providers know, by provider and model-name
// prefix; the longest matching prefix wins, so a dated snapshot
// ("claude-sonnet-4-5-20250929") gets its family's numbers.
var profiles = map[string][]profileEntry{
	"anthropic": {
		{"claude-opus-4", Profile{Window: 200_000, MaxOutput: 32_000, Caches: true}},
		{"claude-opus-4-5", Profile{Window: 200_000, MaxOutput: 64_000, Caches: true}},
		{"claude-sonnet-4", Profile{Window: 200_000, MaxOutput: 64_000, Caches: true}},
		{"claude-haiku-4", Profile{Window: 200_000, MaxOutput: 64_000, Caches: true}},
		{"claude-3-7-sonnet", Profile{Window: 200_000, MaxOutput: 64_000, Caches: true}},
		{"claude-3-5", Profile{Window: 200_000, MaxOutput: 8_192, Caches: true}},
		{"claude-3-opus", Profile{Window: 200_000, MaxOutput: 4_096, Caches: true}},
		{"claude-3-haiku", Profile{Window: 200_000, MaxOutput: 4_096, Caches: true}},
	},
	"openai": {
		{"gpt-5", Profile{Window: 400_000, MaxOutput: 128_000, Caches: true}},
		{"gpt-5-chat", Profile{Window: 128_000, MaxOutput: 16_384, Caches: true}},
		{"gpt-4.1", Profile{Window: 1_047_576, MaxOutput: 32_768, Caches: true}},
		{"gpt-4o", Profile{Window: 128_000, MaxOutput: 16_384, Caches: true}},
		{"gpt-4-turbo", Profile{Window: 128_000, MaxOutput: 4_096}},
		{"gpt-4", Profile{Window: 8_192, MaxOutput: 8_192}},
		{"gpt-3.5-turbo", Profile{Window: 16_385, MaxOutput: 4_096}},
		{"o1", Profile{Window: 200_000, MaxOutput: 100_000, Caches: true}},
		{"o1-mini", Profile{Window: 128_000, MaxOutput: 65_536, Caches: true}},
		{"o3", Profile{Window: 200_000, MaxOutput: 100_000, Caches: true}},
		{"o4-mini", Profile{Window: 200_000, MaxOutput: 100_000, Caches: true}},
		{"codex-mini", Profile{Window: 200_000, MaxOutput: 100_000, Caches: true}},
	},
	"google": {
		{"gemini-3", Profile{Window: 1_048_576, MaxOutput: 65_536, Caches: true}},
		{"gemini-2.5", Profile{Window: 1_048_576, MaxOutput: 65_536, Caches: true}},
		{"gemini-2.0", Profile{Window: 1_048_576, MaxOutput: 8_192}},
		{"gemini-1.5-pro", Profile{Window: 2_097_152, MaxOutput: 8_192}},
		{"gemini-1.5-flash", Profile{Window: 1_048_576, MaxOutput: 8_192}},
	},
}

// ProfileFor returns the profile of a provider's model, matched by the
// longest known prefix of the model name; ok is false for a model we do not
// know (its Window is then 0, and callers fall back to configured numbers).
// The provider names are the providers package's: "anthropic", "openai",
// and "google" or "gemini" for Gemini.
func ProfileFor(provider, model string) (p Profile, ok bool) {
	provider = strings.ToLower(provider)
	if provider == "gemini" {
		provider = "google"
	}
	model = strings.TrimPrefix(model, "models/") // Gemini's resource form
	best := -1
	for _, e := range profiles[provider] {
		if strings.HasPrefix(model, e.prefix) && len(e.prefix) > best {
			p, ok, best = e.p, true, len(e.prefix)
		}
	}
	return p, ok
}

// Override is a configured change to a model's profile: every field that
// is set replaces the known profile's (a nil Caches keeps it).
type Override struct {
	Window    int   `json:"context_window,omitempty"`
	MaxOutput int   `json:"max_output,omitempty"`
	Caches    *bool `json:"caches,omitempty"`
}

// Apply returns p with o's set fields.
func (o Override) Apply(p Profile) Profile {
	if o.Window > 0 {
		p.Window = o.Window
	}
	if o.MaxOutput > 0 {
		p.MaxOutput = o.MaxOutput
	}
	if o.Caches != nil {
		p.Caches = *o.Caches
	}
	return p
}
