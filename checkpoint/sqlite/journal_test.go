package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
)

// crash drops s as a killed process would: the open transaction is never
// committed (closing the connection rolls it back) and the journal is left
// on disk, its lock released.
func crash(t *testing.T, s *Saver) string {
	t.Helper()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	path := ""
	if s.j != nil {
		path = s.j.path
		s.j.f.Close()
		s.j = nil
	}
	s.open = false
	for _, st := range s.stmts {
		st.Close()
	}
	if s.oplogSt != nil {
		s.oplogSt.Close()
	}
	s.wc.Close()
	s.w.Close()
	s.r.Close()
	return path
}

// longDelay keeps the journaled transaction open for the whole test.
var longDelay = Options{CommitDelay: time.Hour}

// openLong opens path with longDelay; the test crashes or closes it.
func openLong(t *testing.T, path string) *Saver {
	t.Helper()
	s, err := Open(path, longDelay)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// reopen opens path again (replaying what a crash left), closed at the
// test's end.
func reopen(t *testing.T, path string) *Saver {
	t.Helper()
	s := openLong(t, path)
	t.Cleanup(func() { s.Close() })
	return s
}

func putMsg(t *testing.T, s *Saver, id, parent, text string) {
	t.Helper()
	if err := s.Put(context.Background(), checkpoint.Step{ThreadID: "th", ID: id, ParentID: parent,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}); err != nil {
		t.Fatal(err)
	}
}

func messages(t *testing.T, s *Saver) string {
	t.Helper()
	c, err := s.Get(context.Background(), checkpoint.Ref{ThreadID: "th"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range c.State.Messages {
		out = append(out, m.Content)
	}
	for _, p := range c.Pending {
		out = append(out, "result:"+p.Result.Content)
	}
	return strings.Join(out, ",")
}

func committed(t *testing.T, path string) int {
	t.Helper()
	s, err := Open(path, Options{CommitDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM checkpoints`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Puts and writes that returned are kept by the journal when the process
// dies before their transaction commits: the next Open replays them, then
// deletes the journal and its oplog row.
func TestJournalReplaysAfterACrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openLong(t, path)
	putMsg(t, s, "c1", "", "one")
	putMsg(t, s, "c2", "c1", "two")
	ctx := context.Background()
	if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "th", ID: "c2"}, checkpoint.Write{CallID: "call1",
		Result: llm.Message{Role: llm.RoleTool, ToolCallID: "call1", Content: "ran"}}); err != nil {
		t.Fatal(err)
	}
	if s.group.stale != 0 || !s.open {
		t.Fatalf("expected an open journaled transaction (open %v)", s.open)
	}
	jpath := crash(t, s)
	if fi, err := os.Stat(jpath); err != nil || fi.Size() <= int64(journalHead) {
		t.Fatalf("journal after the crash: %v %v", fi, err)
	}

	s2 := reopen(t, path)
	if got := messages(t, s2); got != "one,two,result:ran" {
		t.Errorf("after the replay: %q", got)
	}
	if _, err := os.Stat(jpath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the replayed journal is still there: %v", err)
	}
	var rows int
	if err := s2.r.QueryRow(`SELECT COUNT(*) FROM oplog`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("%d oplog rows left, %v", rows, err)
	}
	// The thread goes on from the replayed tip.
	putMsg(t, s2, "c3", "c2", "three")
	if got := messages(t, s2); got != "one,two,three" {
		t.Errorf("after a put on the replayed thread: %q", got)
	}
}

// Without a crash nothing is left behind: Close commits and removes the
// journal.
func TestJournalCloseCommitsAndRemoves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s := openLong(t, path)
	putMsg(t, s, "c1", "", "one")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(path + journalSuffix + "*")
	if len(left) != 0 {
		t.Errorf("journals left after Close: %v", left)
	}
	if n := committed(t, path); n != 1 {
		t.Errorf("%d checkpoints committed, want 1", n)
	}
}

// A journal still locked by a live saver is not replayed by another one;
// once that saver is gone, the next lease taken on the file applies it.
func TestJournalOfALiveSaverIsLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	a, err := Open(path, longDelay)
	if err != nil {
		t.Fatal(err)
	}
	putMsg(t, a, "c1", "", "one")
	b, err := Open(path, Options{CommitDelay: -1, BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("a second saver beside a live one: %v", err)
	}
	defer b.Close()
	if _, err := os.Stat(a.j.path); err != nil {
		t.Fatalf("the live saver's journal was taken: %v", err)
	}
	crash(t, a)
	// b takes over the thread: the dead saver's put comes first.
	if _, err := b.Acquire(context.Background(), "th", "b", time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := messages(t, b); got != "one" {
		t.Errorf("after taking the lease: %q", got)
	}
}

// A put that fails inside the journaled transaction leaves the operations
// before it in place: the transaction is rolled back and they are run
// again from the journal.
func TestJournalFailedOperationKeepsTheOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openLong(t, path)
	putMsg(t, s, "c1", "", "one")
	err := s.PutWrite(context.Background(), checkpoint.Ref{ThreadID: "th", ID: "nope"}, checkpoint.Write{CallID: "x",
		Result: llm.Message{Role: llm.RoleTool, ToolCallID: "x", Content: "lost"}})
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("write to a missing checkpoint: %v", err)
	}
	putMsg(t, s, "c2", "c1", "two")
	jpath := crash(t, s)
	_, recs := readJournalFile(t, jpath)
	if len(recs) != 2 {
		t.Errorf("%d journal records, want 2 (the failed write is not one)", len(recs))
	}
	s2 := reopen(t, path)
	if got := messages(t, s2); got != "one,two" {
		t.Errorf("after the replay: %q", got)
	}
}

// A process that died after a commit but before emptying its journal left
// records already in the database: the oplog row says how far, and only the
// later ones are replayed.
func TestJournalSkipsCommittedRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openLong(t, path)
	putMsg(t, s, "c1", "", "one")
	first, err := os.ReadFile(s.j.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	putMsg(t, s, "c2", "c1", "two")
	jpath := crash(t, s)
	now, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	// The journal as if it had not been emptied: record 1, then record 2.
	if err := os.WriteFile(jpath, append(first, now[journalHead:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, recs := readJournalFile(t, jpath); len(recs) != 2 || recs[0].seq != 1 || recs[1].seq != 2 {
		t.Fatalf("rebuilt journal: %+v", recs)
	}
	s2, err := Open(path, longDelay)
	if err != nil {
		t.Fatalf("replaying a journal with a committed record: %v", err)
	}
	defer s2.Close()
	if got := messages(t, s2); got != "one,two" {
		t.Errorf("after the replay: %q", got)
	}
}

// A record cut short (the process died while writing it, so its caller
// never saw it succeed) ends the journal; the records before it are
// replayed.
func TestJournalTornTailIsDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openLong(t, path)
	putMsg(t, s, "c1", "", "one")
	putMsg(t, s, "c2", "c1", "two")
	jpath := crash(t, s)
	data, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jpath, data[:len(data)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := reopen(t, path)
	if got := messages(t, s2); got != "one" {
		t.Errorf("after the replay of a torn journal: %q", got)
	}
}

// A record whose checksum holds but that this build cannot read is not
// skipped: Open fails and says which file to move aside.
func TestJournalUnreadableRecordFailsOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s := openLong(t, path)
	putMsg(t, s, "c1", "", "one")
	crash(t, s)
	j, err := createJournal(path, false)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := appendStmt(nil, stmtNamed, "no such statement", nil)
	if err := j.append(body, false); err != nil {
		t.Fatal(err)
	}
	j.f.Close() // unlocked: as if its process died
	_, err = Open(path, longDelay)
	if err == nil || !strings.Contains(err.Error(), j.path) || !strings.Contains(err.Error(), "rename or move the file") {
		t.Fatalf("open with an unreadable journal: %v", err)
	}
	if err := os.Rename(j.path, j.path+".aside"); err != nil {
		t.Fatal(err)
	}
	s2 := reopen(t, path)
	if got := messages(t, s2); got != "one" {
		t.Errorf("after moving the bad journal aside: %q", got)
	}
}

// Many puts share one commit: a thread of 100 puts and writes written
// quickly is committed a few times, not 200.
func TestJournalSharesCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openLong(t, path)
	defer s.Close()
	commits := 0
	prev := ""
	for i := range 100 {
		id := fmt.Sprint("c", i)
		putMsg(t, s, id, prev, id)
		prev = id
		if !s.open {
			commits++
		}
	}
	if commits > 1 {
		t.Errorf("%d commits for 100 puts", commits)
	}
	if s.j.seq != 100 {
		t.Errorf("%d journal records, want 100", s.j.seq)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if s.open || s.j.size != int64(journalHead) {
		t.Errorf("after Flush: open %v, journal %d bytes", s.open, s.j.size)
	}
}

// The commit delay bounds how long a put waits in the open transaction.
func TestJournalCommitsAfterTheDelay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{CommitDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	putMsg(t, s, "c1", "", "one")
	deadline := time.Now().Add(10 * time.Second)
	for s.dirty.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the open transaction was not committed after its delay")
		}
		time.Sleep(time.Millisecond)
	}
	other, err := Open(path, Options{CommitDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got := messages(t, other); got != "one" {
		t.Errorf("another saver reads %q", got)
	}
}

func readJournalFile(t *testing.T, path string) (int64, []jrecord) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gen, recs, err := readJournal(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return gen, recs
}

// Statements round-trip through the record encoding.
func TestJournalStatementEncoding(t *testing.T) {
	args := []any{nil, int64(-5), 7, int32(3), true, "text é", []byte{0, 1, 2}, 2.5}
	b, err := appendStmt(nil, stmtSQL, "INSERT INTO x VALUES (?)", args)
	if err != nil {
		t.Fatal(err)
	}
	b, err = appendStmt(b, stmtNamed, "insertcp", []any{"a"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeStmts(b)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]jstmt{
		{named: false, text: "INSERT INTO x VALUES (?)", args: []any{nil, int64(-5), int64(7), int64(3), int64(1), "text é", []byte{0, 1, 2}, 2.5}},
		{named: true, text: "insertcp", args: []any{"a"}},
	})
	if fmt.Sprint(got) != want {
		t.Errorf("decoded %v, want %v", got, want)
	}
	if _, err := appendStmt(nil, stmtSQL, "x", []any{struct{}{}}); err == nil {
		t.Error("an argument of an unknown type was recorded")
	}
}

// FuzzJournal reads arbitrary bytes as a journal: no panic, no record
// whose statements do not re-encode to what was read.
func FuzzJournal(f *testing.F) {
	j := &journal{gen: 42}
	var file bytes.Buffer
	head := make([]byte, journalHead)
	copy(head, journalMagic)
	file.Write(head)
	body, _ := appendStmt(nil, stmtNamed, "insertcp", []any{"th", "", "c1", "", []byte("{}")})
	body, _ = appendStmt(body, stmtSQL, "DELETE FROM chunks WHERE thread = ?", []any{"th", int64(3), 1.5, nil})
	b := j.frame(body)
	file.Write(b)
	f.Add(file.Bytes())
	f.Add(file.Bytes()[:len(file.Bytes())-2])
	f.Add([]byte(journalMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, recs, _ := readJournal(bytes.NewReader(data))
		for _, r := range recs {
			var again []byte
			for _, st := range r.stmts {
				kind := byte(stmtSQL)
				if st.named {
					kind = stmtNamed
				}
				var err error
				if again, err = appendStmt(again, kind, st.text, st.args); err != nil {
					t.Fatal(err)
				}
			}
			back, err := decodeStmts(again)
			if err != nil || fmt.Sprint(back) != fmt.Sprint(r.stmts) {
				t.Fatalf("record %d does not round-trip: %v", r.seq, err)
			}
		}
	})
}

// After a failed operation puts the others back, their transaction is
// still committed when its delay is over, with no later operation.
func TestJournalCommitsAfterAFailedOperation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{CommitDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	putMsg(t, s, "c1", "", "one")
	err = s.PutWrite(context.Background(), checkpoint.Ref{ThreadID: "th", ID: "nope"}, checkpoint.Write{CallID: "x",
		Result: llm.Message{Role: llm.RoleTool, ToolCallID: "x", Content: "lost"}})
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("write to a missing checkpoint: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.dirty.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the transaction put back after the failure was never committed")
		}
		time.Sleep(time.Millisecond)
	}
	if n := committed(t, path); n != 1 {
		t.Errorf("%d checkpoints committed, want 1", n)
	}
}

// A journal whose header never reached the disk (its process died as it
// made it, or the machine lost power) holds nothing that was acknowledged:
// Open removes it instead of failing, and still replays the others. A file
// still being made (named with journalTmp) is not a journal yet.
func TestJournalWithoutHeaderIsRemoved(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"cut short", []byte("DAOPLO")},
		{"zeros", make([]byte, 40)},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			s, err := Open(path, longDelay)
			if err != nil {
				t.Fatal(err)
			}
			putMsg(t, s, "c1", "", "one")
			crash(t, s)
			bad := path + journalSuffix + "00000000000000ab"
			making := path + journalSuffix + "00000000000000cd" + journalTmp
			for _, p := range []string{bad, making} {
				if err := os.WriteFile(p, c.data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s2, err := Open(path, longDelay)
			if err != nil {
				t.Fatalf("open beside a journal without its header: %v", err)
			}
			defer s2.Close()
			if got := messages(t, s2); got != "one" {
				t.Errorf("after the replay: %q", got)
			}
			if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the journal without a header is still there: %v", err)
			}
			if _, err := os.Stat(making); err != nil {
				t.Errorf("a file being made was touched: %v", err)
			}
		})
	}
}

// createJournal leaves one file, under the journal's name, locked and
// headed: nothing under the name it was made with.
func TestJournalCreatedUnderItsName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	j, err := createJournal(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer j.f.Close()
	files, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0] != j.path {
		t.Errorf("files beside the database: %q, want only %q", files, j.path)
	}
	if gen, recs := readJournalFile(t, j.path); gen != j.gen || len(recs) != 0 {
		t.Errorf("new journal reads as generation %d with %d records, want %d and none", gen, len(recs), j.gen)
	}
	f, err := os.Open(j.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ok, err := lockFile(f); err != nil || ok {
		t.Errorf("the new journal's lock could be taken (%v, %v): it must be held", ok, err)
	}
}

// A frame whose length is garbage (a torn or stale tail) ends the journal
// without allocating what the length claims.
func TestJournalGarbageLengthAllocatesLittle(t *testing.T) {
	data := make([]byte, journalHead, journalHead+16)
	copy(data, journalMagic)
	data = binary.LittleEndian.AppendUint32(data, maxJournalRecord-1)
	data = append(data, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, recs, err := readJournal(bytes.NewReader(data))
	runtime.ReadMemStats(&after)
	if err != nil || len(recs) != 0 {
		t.Fatalf("journal with a garbage length: %d records, %v", len(recs), err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("reading it allocated %d bytes", n)
	}
}

// When SQLite rolls the open transaction back on its own (a statement
// failing on a full disk or an I/O error does), the saver finds out at the
// next read error or commit and runs the journaled work again, instead of
// letting the next put run outside any transaction and the oplog claim
// records that were lost.
func TestJournalTransactionLostBehindTheSaver(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openLong(t, path)
	putMsg(t, s, "c1", "", "one")
	lose := func() {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		if _, err := s.wc.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
	}
	lose()
	// A read whose statement fails inside the transaction (as the one that
	// made SQLite roll back would) commits it, putting c1 back.
	ioErr := errors.New("disk I/O error")
	if err := s.readTx(ctx, func(querier) error { return ioErr }); err != ioErr {
		t.Fatalf("failed read: %v", err)
	}
	putMsg(t, s, "c2", "c1", "two")
	lose()
	// A commit puts c2 back too.
	if err := s.Flush(); err != nil {
		t.Fatalf("commit after the transaction was lost: %v", err)
	}
	if n := committed(t, path); n != 2 {
		t.Errorf("%d checkpoints committed, want 2", n)
	}
	putMsg(t, s, "c3", "c2", "three")
	crash(t, s)
	s2 := reopen(t, path)
	if got := messages(t, s2); got != "one,two,three" {
		t.Errorf("after the replay: %q", got)
	}
}

// When a commit fails and the journal cannot be run again either, the
// saver stops writing: the commit's error comes back from every later put
// and from Close, and the journal stays for the next Open, which applies it.
func TestJournalFailedCommitSticks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openLong(t, path)
	putMsg(t, s, "c1", "", "one")
	s.wmu.Lock()
	jpath := s.j.path
	// The transaction is lost and the journal out of reach.
	if _, err := s.wc.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(jpath, jpath+".away"); err != nil {
		t.Fatal(err)
	}
	s.wmu.Unlock()
	ferr := s.Flush()
	if ferr == nil || !strings.Contains(ferr.Error(), jpath) {
		t.Fatalf("failed commit: %v, want an error naming the journal", ferr)
	}
	if err := s.Flush(); err == nil || err.Error() != ferr.Error() {
		t.Errorf("a second Flush: %v, want %v", err, ferr)
	}
	err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "c2", ParentID: "c1",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "two"}}})
	if err == nil || err.Error() != ferr.Error() {
		t.Errorf("put after the failed commit: %v, want %v", err, ferr)
	}
	if err := os.Rename(jpath+".away", jpath); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err == nil {
		t.Error("Close after a failed commit returned no error")
	}
	if _, err := os.Stat(jpath); err != nil {
		t.Fatalf("the journal was not kept: %v", err)
	}
	s2 := reopen(t, path)
	if got := messages(t, s2); got != "one" {
		t.Errorf("after the replay: %q", got)
	}
}

// A process that finds a dead saver's journal locked by another process
// replaying it must not take the thread without the journal's records:
// recovery takes SQLite's write lock before the journal's lock, so the
// latecomer waits for the write lock and then sees the replay (here the
// other process gives up instead, and the latecomer replays the journal
// itself). Open waits the same way, within its busy timeout.
func TestJournalRecoveryWaitsForAnotherReplay(t *testing.T) {
	if !journalSupported {
		t.Skip("no journal on this platform")
	}
	ctx := context.Background()
	for _, viaOpen := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "state.db")
		dead := openLong(t, path)
		var late *Saver
		if !viaOpen {
			var err error
			if late, err = Open(path, Options{CommitDelay: -1}); err != nil {
				t.Fatal(err)
			}
		}
		putMsg(t, dead, "c1", "", "one")
		jpath := crash(t, dead)

		// The other process: it holds the journal's lock and the write
		// lock, as while replaying.
		f, err := os.OpenFile(jpath, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := lockFile(f); !ok || err != nil {
			t.Fatalf("lock the journal: %v %v", ok, err)
		}
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}

		done := make(chan *Saver, 1)
		go func() {
			s := late
			var err error
			if viaOpen {
				s, err = Open(path, Options{CommitDelay: -1})
			} else {
				_, err = s.Acquire(ctx, "th", "late", time.Now(), time.Minute)
			}
			if err != nil {
				t.Error(err)
				s = nil
			}
			done <- s
		}()
		select {
		case <-done:
			t.Fatalf("open %v: went on while another process held the journal and the write lock; it would read the thread without the journal's records", viaOpen)
		case <-time.After(300 * time.Millisecond):
		}
		// The other process gives up without replaying.
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		f.Close()
		conn.Close()
		db.Close()
		s := <-done
		if s == nil {
			continue
		}
		if got := messages(t, s); got != "one" {
			t.Errorf("open %v: after the wait %q, want the journal's record", viaOpen, got)
		}
		s.Close()
	}
}

// Taking a lease lists the directory for journals of dead savers only when
// the directory has changed since a listing that found none: a journal
// made there afterwards is always seen, and an unchanged directory costs a
// stat.
func TestOtherJournalsListedOnlyAfterAChange(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s := openLong(t, path)
	defer s.Close()
	putMsg(t, s, "c1", "", "one") // makes this saver's own journal
	old := time.Now().Add(-time.Minute).Truncate(time.Second)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if got, err := s.otherJournals(); err != nil || len(got) != 0 {
		t.Fatalf("other journals in a directory with none: %v %v", got, err)
	}
	if !s.none.Equal(old) {
		t.Fatalf("a quiet directory without other journals was not remembered: %v", s.none)
	}
	// Another saver's journal appears: the directory's time moves on.
	other := path + journalSuffix + "0123456789abcdef"
	if err := os.WriteFile(other, []byte(journalMagic), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := s.otherJournals(); err != nil || len(got) != 1 || got[0] != other {
		t.Fatalf("the new journal was not listed: %v %v", got, err)
	}
	if !s.none.IsZero() {
		t.Errorf("a listing that found a journal was remembered as empty")
	}
	// With the journal gone and the directory quiet again, the next
	// listing is remembered; putting the old time back over a new file
	// shows that the stat alone answered.
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.otherJournals(); len(got) != 0 || !s.none.Equal(old) {
		t.Fatalf("after the journal went: %v, remembered %v", got, s.none)
	}
	if err := os.WriteFile(other, []byte(journalMagic), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.otherJournals(); len(got) != 0 {
		t.Errorf("an unchanged directory was listed again: %v", got)
	}
	os.Remove(other)
	// A directory changed less than quietFor before a listing is not
	// remembered: a journal made in the same tick would not move its time.
	now := time.Now()
	if err := os.Chtimes(dir, now, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.otherJournals(); err != nil || !s.none.IsZero() {
		t.Errorf("a directory changed just now was remembered (%v)", err)
	}
}

// While another saver writes to the same database, each operation is
// committed before it returns, so that the other is not kept off SQLite's
// one write lock for the commit delay; alone again, the saver goes back
// to committing after the delay.
func TestJournalCommitsAtOnceWhileShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openLong(t, path)
	defer s.Close()
	seen := func() int { // what other connections see: committed rows
		t.Helper()
		var n int
		if err := s.r.QueryRow(`SELECT COUNT(*) FROM checkpoints`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	lookAgain := func() {
		s.wmu.Lock()
		s.sharedAt = time.Time{}
		s.wmu.Unlock()
	}
	o := openLong(t, path) // another saver, without a journal yet
	putMsg(t, s, "c1", "", "one")
	if n := seen(); n != 0 {
		t.Fatalf("%d checkpoints committed by a saver alone, want 0 before its delay", n)
	}
	// The other saver makes the journal its first put would make.
	j, err := createJournal(path, false)
	if err != nil {
		t.Fatal(err)
	}
	o.wmu.Lock()
	o.j = j
	o.wmu.Unlock()
	lookAgain()
	putMsg(t, s, "c2", "c1", "two")
	if n := seen(); n != 2 {
		t.Fatalf("%d checkpoints committed beside another saver, want 2", n)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	lookAgain()
	putMsg(t, s, "c3", "c2", "three")
	if n := seen(); n != 2 {
		t.Fatalf("%d checkpoints committed once alone again, want 2 (the third waits for the delay)", n)
	}
}

// Two savers with a long commit delay on one file: the second's put waits
// for the write lock the first keeps open, until the first sees the
// second's journal at its next operation and commits; from then on both
// commit each operation, and neither waits for the other's delay.
func TestTwoSaversOnOneFileTakeTurns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	a := openLong(t, path)
	defer a.Close()
	b := openLong(t, path)
	defer b.Close()
	putMsg(t, a, "a1", "", "a one") // a's transaction stays open
	done := make(chan error, 1)
	go func() {
		done <- b.Put(context.Background(), checkpoint.Step{ThreadID: "tb", ID: "b1",
			Messages: []llm.Message{{Role: llm.RoleUser, Content: "b one"}}})
	}()
	// b makes its journal, then waits for the lock; a's next operation,
	// once sharedCheck has passed, sees the journal and commits.
	for deadline := time.Now().Add(5 * time.Second); ; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the second saver's put: %v", err)
			}
		default:
			if time.Now().After(deadline) {
				t.Fatal("the second saver's put still waits for the first's open transaction")
			}
			time.Sleep(sharedCheck)
			putMsg(t, a, fmt.Sprintf("a%d", time.Now().UnixNano()), "", "a again")
			continue
		}
		break
	}
	// b is shared from its first put: committed as it returned.
	var n int
	if err := a.r.QueryRow(`SELECT COUNT(*) FROM checkpoints WHERE thread = 'tb'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the second saver's put is not committed: %d %v", n, err)
	}
}

// The journal is on disk between a crash and the next Open, which may be
// a newer build's: a journal the first journaled build left (testdata/
// journal_v1: a database whose saver died with two puts and a write in its
// journal, none committed) must replay forever, with the statements it
// names. Regenerate it only for a new version, with
// CHECKPOINT_WRITE_GOLDEN_JOURNAL=1, and keep the old one.
func TestGoldenV1Journal(t *testing.T) {
	golden := filepath.Join("testdata", "journal_v1")
	if os.Getenv("CHECKPOINT_WRITE_GOLDEN_JOURNAL") != "" {
		writeGoldenJournal(t, golden)
	}
	entries, err := os.ReadDir(golden)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	journals := 0
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(golden, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(e.Name(), journalSuffix) {
			journals++
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if journals != 1 {
		t.Fatalf("%s holds %d journals, want 1", golden, journals)
	}
	s := reopen(t, filepath.Join(dir, "state.db"))
	if got := messages(t, s); got != "one,two,result:ran" {
		t.Errorf("after replaying the v1 journal: %q, want one,two,result:ran", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*"+journalSuffix+"*")); len(left) != 0 {
		t.Errorf("the replayed journal is still there: %v", left)
	}
}

func writeGoldenJournal(t *testing.T, golden string) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s := openLong(t, path)
	putMsg(t, s, "c1", "", "one")
	putMsg(t, s, "c2", "c1", "two")
	if err := s.PutWrite(context.Background(), checkpoint.Ref{ThreadID: "th", ID: "c2"}, checkpoint.Write{CallID: "call1",
		Result: llm.Message{Role: llm.RoleTool, ToolCallID: "call1", Content: "ran"}}); err != nil {
		t.Fatal(err)
	}
	jpath := crash(t, s)
	// Fold the WAL into the database file so that two files hold it all.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.RemoveAll(golden); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(golden, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, jpath} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(golden, filepath.Base(p)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
