package compact

import (
	"encoding/json"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
)

// The events of a compaction. EventStart and EventEnd bracket a compaction
// of the history the model is sent (a summary of the older messages
// replaces them in every later request; the thread itself keeps every
// message); both carry an *Info (InfoOf), under "compaction" in their JSON.
const (
	EventStart agent.EventType = "compaction.start"
	EventEnd   agent.EventType = "compaction.end"
)

// payloadKey is the name of a compaction event's payload in its JSON.
const payloadKey = "compaction"

// Info describes a compaction of the history sent to the model.
type Info struct {
	// Trigger says why: "auto" (the request reached the threshold),
	// "overflow" (the provider said the request was too long) or "manual"
	// (the compact_conversation tool).
	Trigger string `json:"trigger"`
	// TokensBefore is the estimated size of the request before compaction;
	// TokensAfter (end only) its size after.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after,omitempty"`
	// Cutoff (end only) is the index into the thread's messages from which
	// messages are still sent as they are; the ones before it are summarised.
	Cutoff int `json:"cutoff,omitempty"`
	// Evicted (end only) is how many messages this compaction summarised.
	Evicted int `json:"evicted,omitempty"`
	// File is where the summarised messages were saved in full (end only;
	// empty when saving failed).
	File string `json:"file,omitempty"`
	// SummarizerCalls counts the summariser's calls (chunks, merge, re-prompt).
	SummarizerCalls int `json:"summarizer_calls,omitempty"`
	// Usage is what the summariser's calls used (end only). It is also in
	// the usage of the agent compacted (Result.Usage, UsageByAgent under
	// that agent's path) and in its context ledger, so that a run's usage
	// counts every token paid for it.
	Usage llm.Usage `json:"usage,omitzero"`
	// Verbatim lists facts the summary lost that were appended as written.
	Verbatim []string `json:"verbatim,omitempty"`
	// Error (end only) says why the compaction did not happen, or what went
	// wrong around it (a history file that could not be written).
	Error string `json:"error,omitempty"`
}

// event is a compaction event of type typ.
func event(typ agent.EventType, info *Info) agent.Event {
	return agent.Event{Type: typ, Payload: &agent.Payload{Key: payloadKey, Value: info}}
}

// InfoOf returns the payload of a compaction event: of one a run emitted,
// or one read back from JSON. ok is false for any other event.
func InfoOf(ev agent.Event) (info *Info, ok bool) {
	if (ev.Type != EventStart && ev.Type != EventEnd) || ev.Payload == nil || ev.Payload.Key != payloadKey {
		return nil, false
	}
	switch v := ev.Payload.Value.(type) {
	case *Info:
		return v, v != nil
	case json.RawMessage:
		var i Info
		if json.Unmarshal(v, &i) != nil {
			return nil, false
		}
		return &i, true
	}
	return nil, false
}
