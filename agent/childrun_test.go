package agent_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
)

// A result decoded from JSON has only its error's text; WithCause gives it
// back the cause, which its Err wraps with the status's sentinel. A result
// that ended ok keeps no error.
func TestResultWithCause(t *testing.T) {
	var res agent.Result
	if err := json.Unmarshal([]byte(`{"agent":"parent / helper#t1","status":"error","error":"the store is down"}`), &res); err != nil {
		t.Fatal(err)
	}
	if errors.Is(res.Err(), agent.ErrRecorderUnavailable) {
		t.Fatal("a decoded result matches ErrRecorderUnavailable by itself")
	}
	got := res.WithCause(agent.ErrRecorderUnavailable).Err()
	if !errors.Is(got, agent.ErrRecorderUnavailable) || !errors.Is(got, agent.ErrFailed) {
		t.Errorf("with the cause: %v", got)
	}
	if res.Err() == nil || errors.Is(res.Err(), agent.ErrRecorderUnavailable) {
		t.Error("WithCause changed the result it was called on")
	}
	ok := agent.Result{Status: agent.StatusOK}
	if err := ok.WithCause(agent.ErrRecorderUnavailable).Err(); err != nil {
		t.Errorf("an ok result has error %v", err)
	}
}
