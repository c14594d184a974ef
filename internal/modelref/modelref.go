// Package modelref guesses the provider of a model name written without
// one, for the hints of error messages; the config files and the providers
// share it.
package modelref

import "strings"

// modelFamilies are the name prefixes of the built-in providers' models,
// for Suggest.
var modelFamilies = []struct{ prefix, provider string }{
	{"gpt-", "openai"}, {"chatgpt-", "openai"}, {"codex-", "openai"},
	{"o1", "openai"}, {"o3", "openai"}, {"o4", "openai"},
	{"claude-", "anthropic"},
	{"gemini-", "gemini"},
}

// Suggest returns the provider:model string that a model name written
// without its provider most likely means ("gpt-4.1" is "openai:gpt-4.1",
// "claude-sonnet-4-5" "anthropic:claude-sonnet-4-5"), or "" when the name
// is of no model family it knows. It is a hint for error messages.
func Suggest(model string) string {
	model = strings.TrimSpace(model)
	if model == "" || strings.Contains(model, ":") {
		return ""
	}
	low := strings.ToLower(model)
	for _, f := range modelFamilies {
		rest, ok := strings.CutPrefix(low, f.prefix)
		if !ok {
			continue
		}
		// o1, o3 and o4 are whole names or followed by "-": not "o3x".
		if !strings.HasSuffix(f.prefix, "-") && rest != "" && rest[0] != '-' {
			continue
		}
		if strings.HasSuffix(f.prefix, "-") && rest == "" {
			continue
		}
		return f.provider + ":" + model
	}
	return ""
}
