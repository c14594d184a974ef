package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
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

// gatedStore is a Store whose AppendEvents waits for a token on gate and
// then records the highest seq stored.
type gatedStore struct {
	Store
	gate   chan struct{}
	stored atomic.Int64
}

func (g *gatedStore) AppendEvents(ctx context.Context, runID string, evs []StoredEvent) error {
	<-g.gate
	err := g.Store.AppendEvents(ctx, runID, evs)
	g.stored.Store(evs[len(evs)-1].Seq)
	return err
}

// TestEventsStoredBeforeSent: with a store that is not a MemoryStore (so
// events go through the persister), a stream sends an event only once the
// store has it: each event's id, when it arrives, is at most the highest
// stored. The store stores one batch per token, and the test gives the
// first token after the run has emitted its events and the next only after
// an event arrives, so an event sent early would be seen while the
// persister still waits.
func TestEventsStoredBeforeSent(t *testing.T) {
	st := &gatedStore{Store: NewMemoryStore(), gate: make(chan struct{})}
	// emitted is closed once the agent's events are all handed to the
	// server: the store then still holds none of them.
	emitted := make(chan struct{})
	s, err := New(Config{Agents: []AgentSpec{{Name: "burst", Agent: burstAgent(t, 20, 0)}}, Saver: checkpoint.NewMemory(0), Store: st,
		Run: func(ctx context.Context, _ string, a *agent.Agent, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error] {
			return func(yield func(agent.Event, error) bool) {
				defer close(emitted)
				for ev, err := range a.Run(ctx, in, opts...) {
					if !yield(ev, err) {
						return
					}
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s)
	defer hs.Close()
	body := `{"assistant_id":"burst","if_not_exists":"create","stream_mode":"custom","input":{"messages":[{"role":"user","content":"go"}]}}`
	read := make(chan struct{}, 100)
	ended := make(chan struct{})
	var ids []int64
	var early []string
	go func() {
		defer close(ended)
		resp, err := testClient.Post(hs.URL+"/threads/t/runs/stream", "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			v, ok := strings.CutPrefix(sc.Text(), "id: ")
			if !ok {
				continue
			}
			id, _ := strconv.ParseInt(v, 10, 64)
			if stored := st.stored.Load(); id > stored {
				early = append(early, fmt.Sprintf("event %d sent with %d stored", id, stored))
			}
			ids = append(ids, id)
			read <- struct{}{}
		}
	}()
	// One token once the events are emitted, one more per event read.
	select {
	case <-emitted:
	case <-ended:
	}
	tokens := 1
wait:
	for {
		var gate chan struct{}
		if tokens > 0 {
			gate = st.gate
		}
		select {
		case gate <- struct{}{}:
			tokens--
		case <-read:
			tokens++
		case <-ended:
			break wait
		}
	}
	close(st.gate) // nothing waits any more
	if len(early) > 0 {
		t.Errorf("events sent before they were stored: %v", early)
	}
	if len(ids) < 10 || ids[0] != 1 || ids[len(ids)-1] != int64(len(ids)) {
		t.Errorf("the stream's ids %v, want 1 to n, n ≥ 10", ids)
	}
}

// flakyStore is a Store whose AppendEvents fails its first fails calls.
type flakyStore struct {
	Store
	fails atomic.Int64
	calls atomic.Int64
}

func (f *flakyStore) AppendEvents(ctx context.Context, runID string, evs []StoredEvent) error {
	f.calls.Add(1)
	if f.fails.Add(-1) >= 0 {
		return errors.New("database is locked")
	}
	return f.Store.AppendEvents(ctx, runID, evs)
}

// TestEventsStoredAfterAFailedAppend: a batch of events the store fails to
// take is tried again, so a store that fails for a moment leaves no gap in
// the run's stored events (a rejoin would miss them).
func TestEventsStoredAfterAFailedAppend(t *testing.T) {
	st := &flakyStore{Store: NewMemoryStore()}
	st.fails.Store(2)
	s := newTestServer(t, st)
	hs := httptest.NewServer(s)
	defer hs.Close()
	body := `{"assistant_id":"burst","if_not_exists":"create","stream_mode":"custom","input":{"messages":[{"role":"user","content":"go"}]}}`
	resp, err := testClient.Post(hs.URL+"/threads/t/runs/stream", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var runID string
	var last int64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "data: "); ok && runID == "" {
			var m struct {
				RunID string `json:"run_id"`
			}
			if json.Unmarshal([]byte(v), &m) == nil {
				runID = m.RunID
			}
		}
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			last, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if runID == "" || last == 0 {
		t.Fatalf("stream gave run %q, last id %d", runID, last)
	}
	evs, err := st.Events(t.Context(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(evs)) < last {
		t.Fatalf("%d events stored, the stream sent up to %d", len(evs), last)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("stored event %d has seq %d: a gap", i, e.Seq)
		}
	}
	if st.calls.Load() < 3 {
		t.Errorf("%d appends: the failures were not tried again", st.calls.Load())
	}
}

// pagingStore counts the pages a store is asked for.
type pagingStore struct {
	Store
	pages  atomic.Int64
	widest atomic.Int64
}

func (p *pagingStore) EventsPage(ctx context.Context, runID string, after int64, limit int) ([]StoredEvent, error) {
	p.pages.Add(1)
	if int64(limit) > p.widest.Load() {
		p.widest.Store(int64(limit))
	}
	return p.Store.(EventPager).EventsPage(ctx, runID, after, limit)
}

// TestFinishedRunStreamsInPages: joining a finished run's stream reads its
// stored events a page at a time, and sends every one, in order.
func TestFinishedRunStreamsInPages(t *testing.T) {
	old := eventsPage
	eventsPage = 7
	defer func() { eventsPage = old }()
	st := &pagingStore{Store: NewMemoryStore()}
	s := newTestServer(t, st)
	hs := httptest.NewServer(s)
	defer hs.Close()
	ids := func(resp *http.Response) (ids []int64, runID string) {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok && runID == "" {
				var m struct {
					RunID string `json:"run_id"`
				}
				if json.Unmarshal([]byte(v), &m) == nil {
					runID = m.RunID
				}
			}
			if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				id, _ := strconv.ParseInt(v, 10, 64)
				ids = append(ids, id)
			}
		}
		return ids, runID
	}
	body := `{"assistant_id":"burst","if_not_exists":"create","stream_mode":["custom","values","updates"],"input":{"messages":[{"role":"user","content":"go"}]}}`
	resp, err := testClient.Post(hs.URL+"/threads/t/runs/stream", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	live, runID := ids(resp)
	// The stream ends with the run's last event, a moment before the run
	// is let go: wait for it to finish, so that the join reads it stored.
	s.mu.Lock()
	lr := s.live[runID]
	s.mu.Unlock()
	if lr != nil {
		select {
		case <-lr.finished:
		case <-time.After(testTimeout):
			t.Fatalf("run %s did not finish", runID)
		}
	}
	req, _ := http.NewRequest("GET", hs.URL+"/threads/t/runs/"+runID+"/stream", nil)
	req.Header.Set("Last-Event-ID", "-1")
	resp, err = testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	joined, _ := ids(resp)
	if len(live) < 20 || !slices.Equal(joined, live) {
		t.Fatalf("joined the finished run: %d events, the live stream had %d", len(joined), len(live))
	}
	if want := int64(len(live)/7 + 1); st.pages.Load() < want || st.widest.Load() != 7 {
		t.Errorf("%d pages of at most %d events read, want %d pages of 7", st.pages.Load(), st.widest.Load(), want)
	}
}
