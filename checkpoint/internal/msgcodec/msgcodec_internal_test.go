package msgcodec

import "testing"

// The compact message form must know every field of llm.Message and
// llm.ToolCall. When this fails, a field was added to one of them: teach
// EncodeMessage and decodeCompact the field under a new first byte (keep
// compactV1 decoding as it is) and update the list in compactFields. Until
// then every message is stored as JSON, so nothing is lost, only speed.
func TestCompactFormKnowsEveryField(t *testing.T) {
	if !compactFields {
		t.Fatal("llm.Message or llm.ToolCall has fields the compact message form does not store")
	}
}
