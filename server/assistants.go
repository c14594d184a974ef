package server

import (
	"time"

	"github.com/google/uuid"
)

// assistantNS is the namespace of assistant ids: an agent's assistant id is
// the UUIDv5 of its name in it, so it stays the same across restarts.
var assistantNS = uuid.NameSpaceURL

type assistant struct {
	ID   string
	Spec AgentSpec
	view Assistant
}

var started = time.Now().UTC()

func newAssistant(spec AgentSpec) *assistant {
	id := uuid.NewSHA1(assistantNS, []byte(spec.Name)).String()
	return &assistant{ID: id, Spec: spec, view: Assistant{
		AssistantID: id, GraphID: spec.Name, Name: spec.Name, Description: spec.Description,
		Config: map[string]any{}, Context: map[string]any{},
		CreatedAt: started, UpdatedAt: started,
		Metadata: map[string]any{"created_by": "system"}, Version: 1,
	}}
}
