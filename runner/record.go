package runner

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
)

// This file turns a run's step records into checkpoint writes.

func ckStatus(s agent.Status) checkpoint.Status {
	switch s {
	case "":
		return checkpoint.StatusRunning
	case agent.StatusOK:
		return checkpoint.StatusDone
	case agent.StatusInterrupted:
		return checkpoint.StatusInterrupted
	}
	return checkpoint.StatusError
}

// unavailable marks err as agent.ErrRecorderUnavailable, keeping its text
// and what it wraps.
type unavailable struct{ err error }

func (e unavailable) Error() string        { return e.err.Error() }
func (e unavailable) Unwrap() error        { return e.err }
func (e unavailable) Is(target error) bool { return target == agent.ErrRecorderUnavailable }

// CheckpointRecorder saves step records in saver under thread: one
// checkpoint per step, one write per call, in the namespace of the record's
// path. A save cut short by the run's cancellation is made again without it
// (what it saves was paid for); one the store cannot take for now fails
// with agent.ErrRecorderUnavailable. A run given Checkpoints records with
// one, and so do the subagent runs it starts.
func CheckpointRecorder(saver checkpoint.RunStore, thread string) agent.Recorder {
	return &ckRecorder{saver: saver, thread: thread}
}

// ckRecorder is CheckpointRecorder's recorder.
type ckRecorder struct {
	saver  checkpoint.RunStore
	thread string
	// metadata goes with the checkpoint of the run's input (WithMetadata).
	metadata map[string]string

	mu sync.Mutex
	// kidJSON holds, by namespace and call id, the summaries of subagent
	// runs already encoded for their calls' result writes, so that the
	// next step's save does not encode them again.
	kidJSON map[string]map[string]encodedKid
}

type encodedKid struct {
	kid *agent.Result
	b   json.RawMessage
}

// Record saves rec.
func (c *ckRecorder) Record(ctx context.Context, rec *agent.StepRecord) error {
	ns := nsOf(rec.Path)
	if rec.Kind == agent.RecordCall {
		return c.recordCall(ctx, ns, rec)
	}
	st := checkpoint.Step{ThreadID: c.thread, NS: ns, ID: rec.ID, ParentID: rec.Parent, Step: rec.Step,
		Metadata: map[string]string{"source": string(rec.Kind)}, Messages: rec.Appended, Usage: rec.Usage,
		Files: rec.Files, Status: ckStatus(rec.Loop.Status), Time: rec.Time}
	if rec.Kind == agent.RecordInput {
		for k, v := range c.metadata {
			if k != "source" {
				st.Metadata[k] = v
			}
		}
	}
	lv, err := json.Marshal(rec.Loop)
	if err != nil {
		return err
	}
	st.Values = map[string]json.RawMessage{loopValue: lv}
	maps.Copy(st.Values, rec.Values)
	c.mu.Lock()
	encoded := c.kidJSON[ns]
	c.mu.Unlock()
	for id, kid := range rec.Children {
		if kid == nil {
			st.Values[childValue+id] = nil
			continue
		}
		b := encoded[id].b
		if encoded[id].kid != kid {
			if b, err = json.Marshal(kid.WithoutState()); err != nil {
				return err
			}
		}
		st.Values[childValue+id] = b
	}
	if err := keep(ctx, func(ctx context.Context) error { return c.saver.Put(ctx, st) }); err != nil {
		return marked(err)
	}
	c.mu.Lock()
	delete(c.kidJSON, ns)
	c.mu.Unlock()
	return nil
}

// recordCall saves a call record as a write under the step in progress.
func (c *ckRecorder) recordCall(ctx context.Context, ns string, rec *agent.StepRecord) error {
	call := rec.Call
	w := checkpoint.Write{CallID: call.ID, Time: rec.Time}
	switch {
	case call.Decision != nil:
		w.Kind = kindDecision
		w.Data, _ = json.Marshal(*call.Decision)
	case call.Waiting != nil:
		w.Kind = kindWaiting
		w.Data, _ = json.Marshal(*call.Waiting)
	case call.Outcome != nil:
		oc := *call.Outcome
		oc.Child, oc.Files = nil, nil
		saved := outcomeOut{savedOutcome: savedOutcome{CallOutcome: oc, Rejected: call.Rejected}}
		if kid := call.Outcome.Child; kid != nil {
			// Encoded once, for this write and for the next checkpoint's value.
			b, err := json.Marshal(kid.WithoutState())
			if err != nil {
				return err
			}
			saved.Child = b
			c.mu.Lock()
			if c.kidJSON == nil {
				c.kidJSON = map[string]map[string]encodedKid{}
			}
			if c.kidJSON[ns] == nil {
				c.kidJSON[ns] = map[string]encodedKid{}
			}
			c.kidJSON[ns][call.ID] = encodedKid{kid: kid, b: b}
			c.mu.Unlock()
		}
		if saved.Content != "" && call.Message.Content == saved.Content {
			// The write's message holds the text already: one copy is enough.
			saved.Content, saved.InResult = "", true
		}
		data, err := saved.encode()
		if err != nil {
			return err
		}
		w.Kind, w.Result, w.Files, w.Data = checkpoint.KindResult, call.Message, call.Outcome.Files, data
	}
	ref := checkpoint.Ref{ThreadID: c.thread, NS: ns, ID: rec.ID}
	return marked(keep(ctx, func(ctx context.Context) error { return c.saver.PutWrite(ctx, ref, w) }))
}

// marked marks a save the store could not take for now as the recorder
// being unavailable.
func marked(err error) error {
	if errors.Is(err, checkpoint.ErrUnavailable) {
		return unavailable{err}
	}
	return err
}

// keepTimeout bounds a save made after the run was cancelled.
const keepTimeout = 30 * time.Second

// keep runs a save. One that fails because the run was cancelled meanwhile
// is made again, without the cancellation (bounded by keepTimeout): what
// it saves was paid for — a model response, a call that finished — and
// the resume must find it. Saves are idempotent, so a save that had landed
// before it failed is not doubled.
func keep(ctx context.Context, save func(context.Context) error) error {
	err := save(ctx)
	if err == nil || ctx.Err() == nil {
		return err
	}
	dctx, stop := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer stop()
	return save(dctx)
}

// decodeOutcome adds the outcome a result write holds to m, taking its
// text from the write's message when the data says it is there.
func decodeOutcome(m *map[string]agent.CallOutcome, w checkpoint.Write) error {
	var s savedOutcome
	if err := json.Unmarshal(w.Data, &s); err != nil {
		return err
	}
	if s.InResult {
		s.Content = w.Result.Content
	}
	s.Files = w.Files
	if *m == nil {
		*m = map[string]agent.CallOutcome{}
	}
	(*m)[w.CallID] = s.CallOutcome
	return nil
}

// decodeInto decodes a write's data into (*m)[call id], making the map when
// needed.
func decodeInto[T any](m *map[string]T, w checkpoint.Write) error {
	var v T
	if err := json.Unmarshal(w.Data, &v); err != nil {
		return err
	}
	if *m == nil {
		*m = map[string]T{}
	}
	(*m)[w.CallID] = v
	return nil
}

// savedOutcome is an agent.CallOutcome as a result write stores it: InResult says
// its Content is the write's message's (not repeated in the data).
type savedOutcome struct {
	agent.CallOutcome
	InResult bool `json:"content_in_result,omitempty"`
	// Rejected: the call never ran, a person rejected it (now or before).
	Rejected bool `json:"rejected,omitempty"`
}

// outcomeOut is a savedOutcome as finishCall writes it, with the child's
// summary encoded beforehand (the field shadows agent.CallOutcome.Child).
type outcomeOut struct {
	savedOutcome
	Child json.RawMessage `json:"child,omitempty"`
}

// encode returns the stored form of o; Child must be JSON already.
func (o *outcomeOut) encode() ([]byte, error) { return json.Marshal(o) }
