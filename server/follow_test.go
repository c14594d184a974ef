package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
)

// flushRecorder is a ResponseWriter that counts its writes and flushes.
type flushRecorder struct {
	header           http.Header
	body             bytes.Buffer
	writes, flushes  int
	bodyAtFirstFlush int
}

func (f *flushRecorder) Header() http.Header { return f.header }
func (f *flushRecorder) WriteHeader(int)     {}
func (f *flushRecorder) Write(b []byte) (int, error) {
	f.writes++
	return f.body.Write(b)
}
func (f *flushRecorder) Flush() { f.flushes++ }

func newTestServer(t *testing.T, st Store) *Server {
	t.Helper()
	s, err := New(Config{Agents: []AgentSpec{{Name: "burst", Agent: burstAgent(t, 20, 0)}}, Saver: checkpoint.NewMemory(0), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// finishedLive is a live run whose events are all stored and which has
// ended, as a stream finds it when it comes late.
func finishedLive(evs []StoredEvent) *liveRun {
	return &liveRun{events: evs, persisted: int64(len(evs)), done: true}
}

// TestFollowWritesReadyEventsTogether: the events a stream finds ready go
// out in one write and one flush (not one flush each), in order, with their
// ids; events of modes the stream does not want are skipped, their ids
// counted; more than 64 KiB of ready events is written in pieces but still
// flushed once.
func TestFollowWritesReadyEventsTogether(t *testing.T) {
	small := []StoredEvent{
		{Seq: 1, Event: "metadata", Data: []byte(`{"run_id":"r"}`)},
		{Seq: 2, Event: "custom", Data: []byte(`{"n":1}`)},
		{Seq: 3, Event: "values", Data: []byte(`{"messages":[]}`)},
		{Seq: 4, Event: "custom", Data: []byte(`{"n":2}`)},
		{Seq: 5, Event: "values", Data: []byte(`{"messages":[1]}`)},
	}
	big := make([]StoredEvent, 5)
	for i := range big {
		big[i] = StoredEvent{Seq: int64(i + 1), Event: "custom", Data: []byte(`"` + strings.Repeat("x", 30<<10) + `"`)}
	}
	all := "event: metadata\ndata: {\"run_id\":\"r\"}\nid: 1\n\n" +
		"event: custom\ndata: {\"n\":1}\nid: 2\n\n" +
		"event: values\ndata: {\"messages\":[]}\nid: 3\n\n" +
		"event: custom\ndata: {\"n\":2}\nid: 4\n\n" +
		"event: values\ndata: {\"messages\":[1]}\nid: 5\n\n"
	for _, tc := range []struct {
		name            string
		evs             []StoredEvent
		after           int64
		only            map[string]bool
		want            string
		writes, flushes int // flushes not counting the one after the headers
	}{
		{name: "all", evs: small, want: all, writes: 1, flushes: 1},
		{name: "after 3", evs: small, after: 3, want: "event: custom\ndata: {\"n\":2}\nid: 4\n\nevent: values\ndata: {\"messages\":[1]}\nid: 5\n\n", writes: 1, flushes: 1},
		{name: "custom only", evs: small, only: map[string]bool{"custom": true},
			want: "event: metadata\ndata: {\"run_id\":\"r\"}\nid: 1\n\nevent: custom\ndata: {\"n\":1}\nid: 2\n\nevent: custom\ndata: {\"n\":2}\nid: 4\n\n", writes: 1, flushes: 1},
		{name: "nothing wanted", evs: small[1:2], only: map[string]bool{"values": true}, want: "", writes: 0, flushes: 0},
		// 30 KiB each: the first write goes out at the third event (past
		// 64 KiB), the second with the last.
		{name: "large", evs: big, writes: 2, flushes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, stored := range []bool{false, true} {
				st := NewMemoryStore()
				s := newTestServer(t, st)
				var lr *liveRun
				if stored {
					if err := st.AppendEvents(context.Background(), "r", tc.evs); err != nil {
						t.Fatal(err)
					}
				} else {
					lr = finishedLive(tc.evs)
				}
				w := &flushRecorder{header: http.Header{}}
				s.follow(w, httptest.NewRequest("GET", "/", nil), lr, "r", tc.after, tc.only)
				want := tc.want
				if tc.name == "large" {
					var b []byte
					for _, ev := range big {
						b = fmt.Appendf(b, "event: custom\ndata: %s\nid: %d\n\n", ev.Data, ev.Seq)
					}
					want = string(b)
				}
				if got := w.body.String(); got != want {
					t.Errorf("stored %v: body\n%.300q\nwant\n%.300q", stored, got, want)
				}
				if w.writes != tc.writes || w.flushes != tc.flushes+1 {
					t.Errorf("stored %v: %d writes and %d flushes, want %d and %d (with the headers' flush)", stored, w.writes, w.flushes, tc.writes, tc.flushes+1)
				}
			}
		})
	}
}

// TestFollowLiveRunTwoStreams: two streams follow a run while its events
// are stored one by one; each gets every event once, in order, and ends
// when the run does (no change is missed between a look and a wait).
func TestFollowLiveRunTwoStreams(t *testing.T) {
	s := newTestServer(t, NewMemoryStore())
	lr := &liveRun{}
	const n = 500
	var wg sync.WaitGroup
	bodies := make([]*flushRecorder, 2)
	for i := range bodies {
		bodies[i] = &flushRecorder{header: http.Header{}}
		wg.Go(func() { s.follow(bodies[i], httptest.NewRequest("GET", "/", nil), lr, "r", 0, nil) })
	}
	var want strings.Builder
	for i := 1; i <= n; i++ {
		ev := StoredEvent{Seq: int64(i), Event: "custom", Data: fmt.Appendf(nil, `{"i":%d}`, i)}
		fmt.Fprintf(&want, "event: custom\ndata: {\"i\":%d}\nid: %d\n\n", i, i)
		lr.mu.Lock()
		lr.events = append(lr.events, ev)
		lr.persisted++
		lr.notifyLocked()
		lr.mu.Unlock()
	}
	lr.mu.Lock()
	lr.done = true
	lr.notifyLocked()
	lr.mu.Unlock()
	wg.Wait()
	for i, b := range bodies {
		if got := b.body.String(); got != want.String() {
			t.Errorf("stream %d: %d bytes, want %d (every event once, in order)", i, len(got), want.Len())
		}
	}
}
