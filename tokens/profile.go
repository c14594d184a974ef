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

// profiles are the models the providers know, by provider and model-name
// prefix; the longest matching prefix wins.
var profiles = map[string][]struct {
	prefix string
	p      Profile
}{
	"anthropic": {
		{"claude-opus-4", Profile{Window: 200_000, MaxOutput: 32_000, Caches: true}},
		{"claude-sonnet-4", Profile{Window: 200_000, MaxOutput: 64_000, Caches: true}},
		{"claude-haiku-4", Profile{Window: 200_000, MaxOutput: 64_000, Caches: true}},
		{"claude-3-7-sonnet", Profile{Window: 200_000, MaxOutput: 64_000, Caches: true}},
		{"claude-3-5", Profile{Window: 200_000, MaxOutput: 8_192, Caches: true}},
	},
	"openai": {
		{"gpt-5", Profile{Window: 400_000, MaxOutput: 128_000, Caches: true}},
		{"gpt-4.1", Profile{Window: 1_047_576, MaxOutput: 32_768, Caches: true}},
		{"gpt-4o", Profile{Window: 128_000, MaxOutput: 16_384, Caches: true}},
		{"o3", Profile{Window: 200_000, MaxOutput: 100_000, Caches: true}},
		{"o4-mini", Profile{Window: 200_000, MaxOutput: 100_000, Caches: true}},
	},
	"google": {
		{"gemini-2.5", Profile{Window: 1_048_576, MaxOutput: 65_536, Caches: true}},
		{"gemini-3", Profile{Window: 1_048_576, MaxOutput: 65_536, Caches: true}},
		{"gemini-2.0", Profile{Window: 1_048_576, MaxOutput: 8_192, Caches: true}},
	},
}

// ProfileFor returns the profile of a provider's model, matched by the
// longest known prefix of the model name; ok is false for a model we do not
// know (its Window is then 0, and callers fall back to configured numbers).
func ProfileFor(provider, model string) (p Profile, ok bool) {
	if provider == "gemini" {
		provider = "google"
	}
	best := -1
	for _, e := range profiles[provider] {
		if strings.HasPrefix(model, e.prefix) && len(e.prefix) > best {
			p, ok, best = e.p, true, len(e.prefix)
		}
	}
	return p, ok
}
