package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/server"
)

// A served run's input may be any messages the server accepts (several,
// with content parts such as images): the Executor stores them in the
// server store, one event each under server.RunInputLog, and starts the
// workflow with a reference to them (RunInput.InputRef). The workflow reads
// them back in pieces through local activities, as it reads a long
// thread's messages, so that no payload grows with the input.

// maxInputMessage is the largest input message, as JSON, a served run
// takes: one message is read back whole, in one activity result.
const maxInputMessage = 1 << 20

// storeInput stores a run's input messages for its workflow.
func (x *Executor) storeInput(ctx context.Context, runID string, msgs []llm.Message) error {
	evs := make([]server.StoredEvent, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("input message %d: %w", i+1, err)
		}
		if len(b) > maxInputMessage {
			return fmt.Errorf("input message %d is %d bytes as JSON; a run on the Temporal fleet takes messages of at most %d: send a smaller one (a smaller image, or the text in parts)", i+1, len(b), maxInputMessage)
		}
		evs[i] = server.StoredEvent{Seq: int64(i) + 1, Event: "message", Data: b}
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := x.store.AppendEvents(ctx, server.RunInputLog(runID), evs); err != nil {
		return fmt.Errorf("storing the run's input for its workflow: %w", err)
	}
	return nil
}

// InputIn is the input of the activity that reads a piece of a served
// run's input: its messages from index From on.
type InputIn struct {
	Run  string `json:"run"`
	From int    `json:"from"`
}

// inputReader is a Registry.Events that can read back the input messages
// an Executor stored (StoreEvents' is one).
type inputReader interface {
	inputMessages(ctx context.Context, runID string, from int) ([]llm.Message, error)
}

// RunInputMessages is the local activity that reads a served run's input
// messages from index in.From on, as many as fit in messagesPiece bytes of
// JSON (one at least).
func (g *Registry) RunInputMessages(ctx context.Context, in InputIn) ([]llm.Message, error) {
	r, ok := g.Events.(inputReader)
	if !ok {
		return nil, sdktemporal.NewNonRetryableApplicationError("this worker cannot read a served run's input: its Registry.Events is not on the servers' store (temporal.StoreEvents)", "NoServerStore", nil)
	}
	return r.inputMessages(ctx, in.Run, in.From)
}

func (s storeEvents) inputMessages(ctx context.Context, runID string, from int) ([]llm.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	var evs []server.StoredEvent
	var err error
	if p, ok := s.st.(server.EventPager); ok {
		evs, err = p.EventsPage(ctx, server.RunInputLog(runID), int64(from), 256)
	} else {
		evs, err = s.st.Events(ctx, server.RunInputLog(runID), int64(from))
	}
	if err != nil {
		return nil, fmt.Errorf("reading the input of run %s: %w", runID, err)
	}
	var out []llm.Message
	size := 0
	for _, e := range evs {
		if len(out) > 0 && size+len(e.Data) > messagesPiece {
			break
		}
		var m llm.Message
		if err := json.Unmarshal(e.Data, &m); err != nil {
			return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("input message %d of run %s does not decode: %v", e.Seq, runID, err), "BadInput", nil)
		}
		out = append(out, m)
		size += len(e.Data)
	}
	return out, nil
}

// servedInput reads the input messages of served run runID in workflow
// code, piece by piece, ending the workflow task after each megabyte (see
// taskBytes).
func (g *Registry) servedInput(ctx workflow.Context, runID string) ([]llm.Message, error) {
	var msgs []llm.Message
	read := 0
	for {
		var piece []llm.Message
		if err := localIn(ctx, g.RunInputMessages, &piece, InputIn{Run: runID, From: len(msgs)}); err != nil {
			return nil, err
		}
		if len(piece) == 0 {
			break
		}
		msgs = append(msgs, piece...)
		if read += piecesSize(piece); read >= taskBytes {
			if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
				return nil, err
			}
			read = 0
		}
	}
	if len(msgs) == 0 {
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("the input of run %s is not in the servers' store", runID), "NoInput", errors.New("no input"))
	}
	return msgs, nil
}
