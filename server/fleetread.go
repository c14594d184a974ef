package server

import (
	"context"
	"encoding/json"
)

// A fleet's run is read where it runs (an Executor reads, say, the log its
// workers publish to) and translated here into the run's stream. So that
// a server that adopts the run sends every event the one before it did not
// store, each server stores, with the run and as its events are stored,
// how far it had read when the events stored so far were made: the
// adopting server reads on from there, rebuilding the stream's state from
// the events before without sending them again.

// readProgress is how far a run's Executor has read, and what of it is
// stored. Its fields but written are guarded by the run's mu.
type readProgress struct {
	// resumed is set for a run adopted with a stored position: read is
	// where the server before stopped, count how many events it had
	// stored then.
	resumed bool
	read    int64
	count   int64
	// known is set once start and msgs are: where the run's first reading
	// began, and how many messages the top-level agent had then.
	known bool
	start int64
	msgs  int
	// marks are the positions read not yet stored, each with the number
	// of events the run had emitted when it was reached (one mark per
	// number: the last position).
	marks []readMark
	// written is the last mark stored, once wrote (touched by one
	// goroutine: the persister, or the run's own with a MemoryStore).
	written readMark
	wrote   bool
}

type readMark struct{ count, pos int64 }

// storedRead is a run's stored reading position, an event of its run-info
// log numbered after the events it covers (see saveRead).
type storedRead struct {
	Start int64 `json:"start"`
	Read  int64 `json:"read"`
	Msgs  int   `json:"msgs"`
}

// readEvent names the run-info log's events that store positions.
const readEvent = "read"

// execRun is what the Executor is given to run lr, whose events tr
// translates: for a run adopted with a stored position, where to read from
// (the translator's messages taken back to where that reading began, and
// quiet until the position the server before stopped at); and the mark
// through which the Executor tells how far it has read.
func (s *Server) execRun(lr *liveRun, tr *translator) ExecRun {
	run := ExecRun{Thread: lr.rec.ThreadID, RunID: lr.rec.RunID, Assistant: lr.asst.Spec.Name,
		Agent: lr.asst.Spec.Agent, Input: lr.input, Decisions: lr.decisions, Adopted: lr.adopted}
	lr.mu.Lock()
	if lr.read == nil {
		lr.read = &readProgress{}
	}
	p := lr.read
	lr.mu.Unlock()
	if p.resumed {
		run.Resumed, run.Start, run.Read = true, p.start, p.read
		if root := tr.msgs[tr.root]; p.msgs < len(root) {
			tr.msgs[tr.root] = root[:p.msgs]
		}
		tr.quiet = p.start < p.read
	}
	run.Mark = func(pos int64) { s.markRead(lr, tr, pos) }
	return run
}

// markRead records that the Executor has yielded every event of lr up to
// pos; it runs in the run's goroutine, as tr does.
func (s *Server) markRead(lr *liveRun, tr *translator, pos int64) {
	lr.mu.Lock()
	p := lr.read
	if !p.known {
		p.known, p.start, p.msgs = true, pos, len(tr.msgs[tr.root])
	}
	n := int64(len(lr.events))
	if k := len(p.marks); k > 0 && p.marks[k-1].count == n {
		p.marks[k-1].pos = pos
	} else {
		p.marks = append(p.marks, readMark{n, pos})
	}
	lr.mu.Unlock()
	tr.quiet = p.resumed && pos < p.read
	if s.mem != nil {
		s.saveRead(lr) // its events are stored as they are emitted
	} else {
		lr.poke()
	}
}

// saveRead stores the last position read whose events are all stored, in
// the run-info log under the number of those events plus two (the log's
// first event is the run's modes): a position already stored under that
// number made the same events, and the store keeps the first.
func (s *Server) saveRead(lr *liveRun) {
	lr.mu.Lock()
	p := lr.read
	if p == nil {
		lr.mu.Unlock()
		return
	}
	var m readMark
	i := 0
	for ; i < len(p.marks) && p.marks[i].count <= lr.persisted; i++ {
		m = p.marks[i]
	}
	p.marks = p.marks[i:]
	start, msgs := p.start, p.msgs
	lr.mu.Unlock()
	if i == 0 || p.wrote && m.count == p.written.count {
		return
	}
	p.written, p.wrote = m, true
	b, _ := json.Marshal(storedRead{Start: start, Read: m.pos, Msgs: msgs})
	if err := s.appendEvents(runInfoLog(lr.rec.RunID), []StoredEvent{{Seq: m.count + 2, Event: readEvent, Data: b}}); err != nil {
		s.log.Error("storing how far a run was read", "run", lr.rec.RunID, "err", err)
	}
}

// loadRead reads the position a run's server stored last (nil when none).
func (s *Server) loadRead(ctx context.Context, runID string) *readProgress {
	ev, ok, err := s.lastStoredEvent(ctx, runInfoLog(runID))
	if err != nil || !ok || ev.Event != readEvent || ev.Seq < 2 {
		return nil
	}
	var r storedRead
	if json.Unmarshal(ev.Data, &r) != nil {
		return nil
	}
	return &readProgress{resumed: true, read: r.Read, count: ev.Seq - 2, known: true, start: r.Start, msgs: r.Msgs,
		written: readMark{ev.Seq - 2, r.Read}, wrote: true}
}
