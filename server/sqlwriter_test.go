package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSQLStoreAppendSizes appends batches of every shape the prepared
// statements split them into (1, 8, 32 and 128 rows, and their sums),
// from concurrent runs so that the writer commits several at once: every
// event comes back, in order, once; an event appended again keeps its
// first data.
func TestSQLStoreAppendSizes(t *testing.T) {
	eachSQLStore(t, appendSizes)
}

func appendSizes(t *testing.T, st *SQLStore) {
	ctx := context.Background()
	sizes := []int{1, 2, 7, 8, 9, 31, 33, 41, 127, 128, 129, 169, 300, 2500}
	events := func(run string, from, to int) []StoredEvent {
		var evs []StoredEvent
		for i := from; i <= to; i++ {
			evs = append(evs, StoredEvent{Seq: int64(i), Event: "custom", Data: fmt.Appendf(nil, `{"run":%q,"i":%d}`, run, i)})
		}
		return evs
	}
	var wg sync.WaitGroup
	for _, n := range sizes {
		run := fmt.Sprint("run-", n)
		wg.Go(func() {
			// Half in one call, up to 20 one by one, the rest in one call.
			if err := st.AppendEvents(ctx, run, events(run, 1, n/2)); err != nil {
				t.Error(err)
			}
			i := n/2 + 1
			for ; i <= n && i <= n/2+20; i++ {
				if err := st.AppendEvents(ctx, run, events(run, i, i)); err != nil {
					t.Error(err)
				}
			}
			if i <= n {
				if err := st.AppendEvents(ctx, run, events(run, i, n)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, n := range sizes {
		run := fmt.Sprint("run-", n)
		// A repeated append (a retry) overlapping the stored events.
		again := events(run, n/2, n)
		for i := range again {
			again[i].Data = []byte(`"again"`)
		}
		if err := st.AppendEvents(ctx, run, again); err != nil {
			t.Fatal(err)
		}
		got, err := st.Events(ctx, run, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("%s: %d events, want %d", run, len(got), n)
		}
		for i, ev := range got {
			want := fmt.Sprintf(`{"run":%q,"i":%d}`, run, i+1)
			if ev.Seq != int64(i+1) || ev.Event != "custom" || string(ev.Data) != want {
				t.Fatalf("%s: event %d = %d %s %s, want %d custom %s", run, i, ev.Seq, ev.Event, ev.Data, i+1, want)
			}
		}
		tail, err := st.Events(ctx, run, int64(n-1))
		if err != nil || len(tail) != 1 || tail[0].Seq != int64(n) {
			t.Fatalf("%s: events after %d = %+v, %v", run, n-1, tail, err)
		}
	}
}

// TestSQLStoreWALBounded: while appends never pause (the writer commits
// back to back, so the background checkpoints never find the WAL idle),
// the WAL still starts over instead of growing with every commit.
func TestSQLStoreWALBounded(t *testing.T) {
	const restart = 100
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := OpenSQLStore(context.Background(), "sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.restartFrames.Store(restart)
	const runs, each = 20, 300
	var wg sync.WaitGroup
	data := []byte(`"` + strings.Repeat("d", 200) + `"`)
	for r := range runs {
		wg.Go(func() {
			for i := 1; i <= each; i++ {
				if err := st.AppendEvents(context.Background(), fmt.Sprint("r", r), []StoredEvent{{Seq: int64(i), Event: "custom", Data: data}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// Each commit adds a few pages: without restarts the WAL ends with
	// some 4,500 of them here, with them about 500.
	pages := fi.Size() / 4096
	t.Logf("WAL: %d pages", pages)
	if pages > 15*restart {
		t.Errorf("the WAL holds %d pages after %d appends, want it restarted near %d", pages, runs*each, restart)
	}
	var n int
	if err := st.db.QueryRow(`SELECT COUNT(*) FROM server_events`).Scan(&n); err != nil || n != runs*each {
		t.Fatalf("%d events stored (%v), want %d", n, err, runs*each)
	}
}

// BenchmarkSQLCommit measures one commit of k events of k different runs
// (the shape of a group commit under many streams), per event.
func BenchmarkSQLCommit(b *testing.B) {
	data := []byte(`{"type":"tool.progress","time":"2026-12-03T14:13:01.123456789Z","agent":"burst","tool":{"call_id":"b1","name":"burst","progress":"line 123"}}`)
	for _, k := range []int{1, 8, 64, 200} {
		b.Run(fmt.Sprint(k), func(b *testing.B) {
			st, err := OpenSQLStore(context.Background(), "sqlite", filepath.Join(b.TempDir(), "e.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			seq := make([]int64, 200)
			run := 0
			batch := make([]appendReq, k)
			for b.Loop() {
				for j := range batch {
					run = (run + 1) % len(seq)
					seq[run]++
					batch[j] = appendReq{runID: fmt.Sprintf("%08d-0000-4000-8000-000000000000", run), evs: []StoredEvent{{Seq: seq[run], Event: "custom", Data: data}}}
				}
				if err := st.commit(batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1000/float64(b.N*k), "µs/event")
		})
	}
}

// TestSQLStoreCommitGap: appends that come one after another are committed
// at least 2 ms apart (a commit starts no sooner than 2 ms after the one
// before it started), so n appends in a row take at least (n-1) × 2 ms;
// without the gap each takes a fraction of a millisecond.
func TestSQLStoreCommitGap(t *testing.T) {
	st, err := OpenSQLStore(context.Background(), "sqlite", filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 20
	start := time.Now()
	for i := 1; i <= n; i++ {
		if err := st.AppendEvents(context.Background(), "r", []StoredEvent{{Seq: int64(i), Event: "custom", Data: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if took, least := time.Since(start), (n-1)*2*time.Millisecond; took < least {
		t.Errorf("%d appends in a row took %v, want at least %v (commits 2 ms apart)", n, took, least)
	}
	got, err := st.Events(context.Background(), "r", 0)
	if err != nil || len(got) != n {
		t.Fatalf("%d events stored (%v), want %d", len(got), err, n)
	}
}
