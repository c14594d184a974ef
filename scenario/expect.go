package scenario

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	compaction "github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/llm/scripted"
)

// The expect block is free-form: whatever it holds, the run is the same and
// nothing here returns an error. Each key this package knows is evaluated
// when its value has a shape listed below; anything else becomes a "not
// checked" entry.

// expectShapes documents, per known key, the shapes that are evaluated.
var expectShapes = map[string]string{
	"no_error":                   "true",
	"error_contains":             "a string or a list of strings",
	"parent_message_count":       "a whole number",
	"files_include":              "a path or a list of paths",
	"files_exclude":              "a path or a list of paths",
	"tool_message_contains":      `{"INDEX": text or [texts]} with INDEX a whole number from 0`,
	"subagent_message_contains":  `{"NAME" or "NAME#CASE": text or [texts]}`,
	"max_concurrent_model_calls": "a whole number",
	"final_state_keys":           "a list of strings",
	"status":                     "a string",
	"parent_messages_exclude":    "a string or a list of strings",
	"model_calls":                "a whole number",
	"interrupted_calls":          "a list of call ids",
	"crashes":                    "a whole number",
	"compactions":                "a whole number",
}

// knownOrder is the order in which known keys are reported.
var knownOrder = []string{"parent_message_count", "files_include", "files_exclude", "tool_message_contains",
	"subagent_message_contains", "parent_messages_exclude", "error_contains", "no_error", "status", "max_concurrent_model_calls", "final_state_keys",
	"model_calls", "interrupted_calls", "crashes", "compactions"}

// strs reads a string or a list of strings.
func strs(raw json.RawMessage) ([]string, bool) {
	if string(raw) == "null" {
		return nil, false
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && many != nil {
		return many, true
	}
	return nil, false
}

// wholeNumber reads an integer (1 and 1.0 alike).
func wholeNumber(raw json.RawMessage) (int, bool) {
	var f float64
	if string(raw) == "null" || json.Unmarshal(raw, &f) != nil || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

// textsByKey reads {"KEY": text or [texts]}; ok is false for any other shape.
func textsByKey(raw json.RawMessage) (map[string][]string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, false
	}
	out := map[string][]string{}
	for k, v := range obj {
		ts, ok := strs(v)
		if !ok {
			return nil, false
		}
		out[k] = ts
	}
	return out, true
}

func (s *Scenario) check(t *Transcript, model *scripted.Model) []Check {
	raw := s.Expect
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var out []Check
	add := func(name string, pass bool, got any) {
		c := Check{Name: name, Pass: pass}
		if !pass {
			c.Got = got
		}
		out = append(out, c)
	}
	notChecked := func(name, note string) {
		out = append(out, Check{Name: name, NotChecked: true, Note: note})
	}
	root, err := parseTreeOpts(raw, "", true)
	if err != nil || root.kind != kObject {
		kind := "something other than an object"
		if err == nil {
			kind = root.kind.words()
		}
		notChecked("expect", fmt.Sprintf("expect is %s; only an object of known keys is checked", kind))
		return out
	}
	vals := map[string]json.RawMessage{}
	for _, m := range root.members {
		vals[m.key] = raw[m.val.start:m.val.end]
	}
	var odd []string // known keys of a shape not understood
	for _, key := range knownOrder {
		v, ok := vals[key]
		if !ok {
			continue
		}
		if !s.checkKey(key, v, t, model, add) {
			odd = append(odd, key)
		}
	}
	listed := map[string]bool{}
	for _, m := range root.members {
		if listed[m.key] {
			continue // a repeated key is listed once
		}
		listed[m.key] = true
		switch {
		case slices.Contains(odd, m.key):
			notChecked(m.key, fmt.Sprintf("the value has a shape this version does not check; it checks %s", expectShapes[m.key]))
		case expectShapes[m.key] == "":
			name := m.key
			if name == "" {
				name = `""` // the empty key, still named
			}
			notChecked(name, "unknown expect key")
		}
	}
	return out
}

// checkKey evaluates one known key; it returns false when the value's shape
// is not one it evaluates (nothing is added then).
func (s *Scenario) checkKey(key string, v json.RawMessage, t *Transcript, model *scripted.Model, add func(string, bool, any)) bool {
	fileNames := func() []string { return slices.Sorted(maps.Keys(t.Files)) }
	switch key {
	case "parent_message_count":
		n, ok := wholeNumber(v)
		if !ok {
			return false
		}
		add(fmt.Sprintf("parent has %d messages", n), len(t.ParentMessages) == n, len(t.ParentMessages))
	case "files_include", "files_exclude":
		paths, ok := strs(v)
		if !ok {
			return false
		}
		for _, f := range paths {
			_, present := t.Files[f]
			if key == "files_include" {
				add("files include "+f, present, fileNames())
			} else {
				add("files exclude "+f, !present, fileNames())
			}
		}
	case "tool_message_contains":
		byIndex, ok := textsByKey(v)
		if !ok {
			return false
		}
		for k := range byIndex {
			if i, err := strconv.Atoi(k); err != nil || i < 0 {
				return false // not an index
			}
		}
		var toolMsgs []Message
		for _, m := range t.ParentMessages {
			if m.Role == "tool" {
				toolMsgs = append(toolMsgs, m)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(byIndex)) {
			i, _ := strconv.Atoi(k)
			for _, text := range byIndex[k] {
				var got any
				pass := false
				if i < len(toolMsgs) {
					got = toolMsgs[i].Content
					pass = strings.Contains(toolMsgs[i].Content, text)
				}
				add(fmt.Sprintf("tool message #%s contains %q", k, text), pass, got)
			}
		}
	case "subagent_message_contains":
		byName, ok := textsByKey(v)
		if !ok {
			return false
		}
		for _, k := range slices.Sorted(maps.Keys(byName)) {
			conv := t.SubagentConversations[k]
			var contents []string
			for _, m := range conv.Messages {
				contents = append(contents, m.Content)
			}
			for _, text := range byName[k] {
				pass := slices.ContainsFunc(contents, func(c string) bool { return strings.Contains(c, text) })
				add(fmt.Sprintf("%s saw a message containing %q", k, text), pass, contents)
			}
		}
	case "error_contains":
		texts, ok := strs(v)
		if !ok {
			return false
		}
		for _, text := range texts {
			add(fmt.Sprintf("run error contains %q", text), t.Error != nil && strings.Contains(*t.Error, text), t.Error)
		}
	case "no_error":
		if string(v) != "true" {
			return false
		}
		add("run finished without error", t.Error == nil, t.Error)
	case "status":
		var want string
		if json.Unmarshal(v, &want) != nil {
			return false
		}
		add(fmt.Sprintf("run status is %s", want), string(t.Status) == want, t.Status)
	case "parent_messages_exclude":
		texts, ok := strs(v)
		if !ok {
			return false
		}
		for _, text := range texts {
			var found []string
			for i, m := range t.ParentMessages {
				in := strings.Contains(m.Content, text)
				for _, p := range m.Parts {
					in = in || strings.Contains(p.Text, text) || strings.Contains(p.Signature, text)
				}
				if in {
					found = append(found, fmt.Sprintf("message %d", i))
				}
			}
			add(fmt.Sprintf("no parent message contains %q", text), len(found) == 0, found)
		}
	case "max_concurrent_model_calls":
		n, ok := wholeNumber(v)
		if !ok {
			return false
		}
		add(fmt.Sprintf("max concurrent model calls is %d", n), model.MaxConcurrent() == n, model.MaxConcurrent())
	case "model_calls":
		n, ok := wholeNumber(v)
		if !ok {
			return false
		}
		add(fmt.Sprintf("%d model calls", n), t.Timing.ModelCalls == n, t.Timing.ModelCalls)
	case "compactions":
		n, ok := wholeNumber(v)
		if !ok {
			return false
		}
		got := 0
		for _, e := range t.Events {
			if info, ok := compaction.InfoOf(e); ok && e.Type == compaction.EventEnd && info.Cutoff > 0 {
				got++
			}
		}
		add(fmt.Sprintf("%d compactions", n), got == n, got)
	case "crashes":
		n, ok := wholeNumber(v)
		if !ok {
			return false
		}
		add(fmt.Sprintf("%d crashes", n), t.Crashes == n, t.Crashes)
	case "interrupted_calls":
		var ids []string
		if json.Unmarshal(v, &ids) != nil || ids == nil {
			return false
		}
		got := []string{}
		for _, in := range t.Interrupts {
			got = append(got, in.CallID)
		}
		add(fmt.Sprintf("the run stopped at calls %v", ids), slices.Equal(ids, got), got)
	case "final_state_keys":
		var keys []string
		if json.Unmarshal(v, &keys) != nil || keys == nil {
			return false
		}
		add(fmt.Sprintf("final state keys are %v", keys), slices.Equal(keys, t.FinalStateKeys), t.FinalStateKeys)
	}
	return true
}
