package sqlite

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The journal: with Options.CommitDelay at its default, puts and writes do
// not each commit an SQLite transaction. The writer keeps one transaction
// open; each put or write runs its statements in it and is then appended,
// as the list of statements it ran, to a journal file of this saver, and
// only then returns. The open transaction is committed when CommitDelay has
// passed since its first operation, when it holds many operations, when a
// lease is released, and before any other kind of write (a lease taken
// joins it); a read while it is open runs
// inside it, on the writer's connection (the read pool sees only what is
// committed). A commit costs the same
// whether it carries one put or a hundred, so a busy thread pays for a few
// commits a second instead of two per model round.
//
// A crash loses nothing that returned: the open transaction is rolled back
// by SQLite, and the next Open (or the next lease taken by another process)
// replays the journal's statements in one transaction. Each commit also
// records in the table oplog the number of the journal's last record it
// holds, so that a replay applies exactly the records that were not yet
// committed, even when the process died between a commit and the journal's
// truncation.
//
// File format: a header of journalMagic and the journal's 8-byte
// generation (random, the key of its oplog row), then records. A record is
// a 4-byte little-endian payload length, the payload's CRC-32C, and the
// payload: an 8-byte record number and the statements, one after another.
// A statement is a kind byte (stmtNamed: a key of statements; stmtSQL: SQL
// text), the name or text, the argument count and the arguments, each a
// type byte and its value. A record cut short or failing its checksum ends
// the journal: it was being written when the process died, so its caller
// never saw it succeed.

const (
	journalMagic = "DAOPLOG1"
	journalHead  = len(journalMagic) + 8
	// maxJournalRecord bounds one record read back (a put of many large
	// files is the biggest).
	maxJournalRecord = 1 << 30

	stmtNamed = 'n'
	stmtSQL   = 's'

	argNil   = 0
	argInt   = 1
	argText  = 2
	argBlob  = 3
	argFloat = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// oplogPut records that the database holds a journal's records up to a
// number.
const oplogPut = `INSERT INTO oplog (gen, seq) VALUES (?, ?) ON CONFLICT (gen) DO UPDATE SET seq = excluded.seq`

// journalSuffix names a saver's journal: the database's path, this, and a
// random part, so that every Saver (in this process or another) has a
// file of its own.
const journalSuffix = "-oplog-"

// journalTmp ends the name of a journal being created (see createJournal).
const journalTmp = ".new"

// journal is one saver's open journal file.
type journal struct {
	f    *os.File
	path string
	gen  int64
	seq  int64 // number of the last record appended
	done int64 // number of the last record committed
	size int64 // bytes in the file
	buf  []byte
}

// createJournal creates and locks a new journal beside the database. The
// file is made under a name that recoverers skip (journalTmp added) and
// takes its journal name only once locked and headed, so a journal found
// with its lock free is always one whose saver is gone, never one being
// made (which a recoverer would otherwise lock first, or find without its
// header). With sync, the header is on disk before the rename and the
// directory after it, so the file is still there after a power cut.
func createJournal(dbPath string, sync bool) (*journal, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	gen := int64(binary.LittleEndian.Uint64(rnd[:]) & math.MaxInt64)
	path := fmt.Sprintf("%s%s%016x", dbPath, journalSuffix, gen)
	tmp := path + journalTmp
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	fail := func(name string, err error) (*journal, error) {
		f.Close()
		os.Remove(name)
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if ok, err := lockFile(f); err != nil || !ok {
		if err == nil {
			err = errors.New("locked by another process")
		}
		return fail(tmp, err)
	}
	head := make([]byte, journalHead)
	copy(head, journalMagic)
	binary.LittleEndian.PutUint64(head[len(journalMagic):], uint64(gen))
	if _, err := f.Write(head); err != nil {
		return fail(tmp, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			return fail(tmp, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(tmp, err)
	}
	if sync {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return fail(path, err)
		}
	}
	return &journal{f: f, path: path, gen: gen, size: int64(journalHead)}, nil
}

// syncDir makes a directory's entries durable (a new file's name).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if e := d.Close(); err == nil {
		err = e
	}
	return err
}

// append writes one record (its payload after the record number is body)
// with a single write, syncing the file when sync is set. A failed append
// leaves the file as it was.
func (j *journal) append(body []byte, sync bool) error {
	if n := 8 + len(body); n > maxJournalRecord {
		return fmt.Errorf("journal record of %d bytes is over the limit of %d", n, maxJournalRecord)
	}
	b := j.frame(body)
	if _, err := j.f.WriteAt(b, j.size); err != nil {
		j.f.Truncate(j.size)
		return err
	}
	if sync {
		if err := j.f.Sync(); err != nil {
			j.f.Truncate(j.size)
			return err
		}
	}
	j.size += int64(len(b))
	j.seq++
	if cap(j.buf) > 1<<20 {
		j.buf = nil
	}
	return nil
}

// frame builds the next record around body, in j's buffer.
func (j *journal) frame(body []byte) []byte {
	b := j.buf[:0]
	b = binary.LittleEndian.AppendUint32(b, uint32(8+len(body)))
	b = append(b, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(j.seq+1))
	b = append(b, body...)
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	j.buf = b
	return b
}

// reset empties the journal after a commit that holds all its records.
func (j *journal) reset() error {
	if j.size == int64(journalHead) {
		return nil
	}
	if err := j.f.Truncate(int64(journalHead)); err != nil {
		return err
	}
	j.size = int64(journalHead)
	return nil
}

// remove closes and deletes the journal.
func (j *journal) remove() error {
	err := os.Remove(j.path)
	if e := j.f.Close(); err == nil {
		err = e
	}
	return err
}

// jstmt is one statement read back from a journal.
type jstmt struct {
	named bool
	text  string // the statement's name, or its SQL
	args  []any
}

// appendStmt encodes one statement to b.
func appendStmt(b []byte, kind byte, text string, args []any) ([]byte, error) {
	b = append(b, kind)
	b = binary.AppendUvarint(b, uint64(len(text)))
	b = append(b, text...)
	b = binary.AppendUvarint(b, uint64(len(args)))
	for _, a := range args {
		switch v := a.(type) {
		case nil:
			b = append(b, argNil)
		case int64:
			b = binary.AppendVarint(append(b, argInt), v)
		case int:
			b = binary.AppendVarint(append(b, argInt), int64(v))
		case int32:
			b = binary.AppendVarint(append(b, argInt), int64(v))
		case bool:
			i := int64(0)
			if v {
				i = 1
			}
			b = binary.AppendVarint(append(b, argInt), i)
		case string:
			b = binary.AppendUvarint(append(b, argText), uint64(len(v)))
			b = append(b, v...)
		case []byte:
			b = binary.AppendUvarint(append(b, argBlob), uint64(len(v)))
			b = append(b, v...)
		case float64:
			b = binary.LittleEndian.AppendUint64(append(b, argFloat), math.Float64bits(v))
		default:
			return b, fmt.Errorf("journal: statement argument of type %T cannot be recorded", a)
		}
	}
	return b, nil
}

// decodeStmts decodes the statements of one record's payload (after its
// record number).
func decodeStmts(p []byte) ([]jstmt, error) {
	var out []jstmt
	for len(p) > 0 {
		var st jstmt
		switch p[0] {
		case stmtNamed:
			st.named = true
		case stmtSQL:
		default:
			return nil, fmt.Errorf("journal: unknown statement kind %d", p[0])
		}
		p = p[1:]
		text, rest, err := readBytes(p)
		if err != nil {
			return nil, err
		}
		st.text, p = string(text), rest
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)) {
			return nil, errors.New("journal: bad argument count")
		}
		p = p[k:]
		st.args = make([]any, 0, n)
		for range n {
			if len(p) == 0 {
				return nil, errors.New("journal: statement cut short")
			}
			tag := p[0]
			p = p[1:]
			switch tag {
			case argNil:
				st.args = append(st.args, nil)
			case argInt:
				v, k := binary.Varint(p)
				if k <= 0 {
					return nil, errors.New("journal: bad integer")
				}
				st.args, p = append(st.args, v), p[k:]
			case argText, argBlob:
				v, rest, err := readBytes(p)
				if err != nil {
					return nil, err
				}
				if tag == argText {
					st.args = append(st.args, string(v))
				} else {
					st.args = append(st.args, bytes.Clone(v))
				}
				p = rest
			case argFloat:
				if len(p) < 8 {
					return nil, errors.New("journal: bad float")
				}
				st.args, p = append(st.args, math.Float64frombits(binary.LittleEndian.Uint64(p))), p[8:]
			default:
				return nil, fmt.Errorf("journal: unknown argument type %d", tag)
			}
		}
		out = append(out, st)
	}
	return out, nil
}

func readBytes(p []byte) (v, rest []byte, err error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return nil, nil, errors.New("journal: bad length")
	}
	return p[k : k+int(n)], p[k+int(n):], nil
}

// jrecord is one record read back from a journal.
type jrecord struct {
	seq   int64
	stmts []jstmt
}

// errNoHeader is readJournal's error for a journal whose header never
// reached the disk (cut short, or zeros after a power cut): no record in
// it was acknowledged, since records are synced after the header.
var errNoHeader = errors.New("journal header: not written")

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// readJournal reads a journal's generation and its whole records, stopping
// at the first record that is cut short or fails its checksum (one being
// written when its process died: its caller never saw it succeed).
func readJournal(r io.Reader) (gen int64, recs []jrecord, err error) {
	head := make([]byte, journalHead)
	if _, err := io.ReadFull(r, head); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, errNoHeader
		}
		return 0, nil, fmt.Errorf("journal header: %w", err)
	}
	if allZero(head) {
		return 0, nil, errNoHeader
	}
	if string(head[:len(journalMagic)]) != journalMagic {
		return 0, nil, errors.New("not a deepagents journal (bad header)")
	}
	gen = int64(binary.LittleEndian.Uint64(head[len(journalMagic):]))
	var frame [8]byte
	for {
		if _, err := io.ReadFull(r, frame[:]); err != nil {
			return gen, recs, nil
		}
		n := binary.LittleEndian.Uint32(frame[:4])
		if n < 8 || n > maxJournalRecord {
			return gen, recs, nil
		}
		// Read as far as the file goes rather than allocating n at once:
		// a length from a torn or stale tail can be anything up to the
		// limit.
		p, err := io.ReadAll(io.LimitReader(r, int64(n)))
		if err != nil || len(p) != int(n) {
			return gen, recs, nil
		}
		if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(frame[4:]) {
			return gen, recs, nil
		}
		stmts, err := decodeStmts(p[8:])
		if err != nil {
			// The checksum held, so this is not a torn write: a record
			// this build cannot read must not be skipped silently.
			return gen, recs, err
		}
		recs = append(recs, jrecord{seq: int64(binary.LittleEndian.Uint64(p[:8])), stmts: stmts})
	}
}

// recoverJournals replays those of the journals at paths whose savers are
// gone (their file lock is free) into the database, then deletes them. A journal still
// locked belongs to a live saver and is left alone.
//
// Recovery takes SQLite's write lock before a journal's file lock and keeps
// it until the replay is committed. A process that finds a journal's lock
// held (by its live saver, or by another process replaying it) skips it, and
// then has to wait for the write lock before it takes a lease or writes: by
// then the replay is committed. With lenient set (at Open, which takes no
// lease), a journal is skipped rather than waited for when the write lock
// stays busy, so a store opens beside a saver holding a long transaction;
// the next lease taken replays it.
func (s *Saver) recoverJournals(ctx context.Context, paths []string, lenient bool) error {
	for _, p := range paths {
		if err := s.recoverJournal(ctx, p, lenient); err != nil {
			return fmt.Errorf("replaying the journal %s of a store that was not closed: %w (rename or move the file to open the store without it)", p, err)
		}
	}
	return nil
}

// quietFor is how long the database's directory must have gone unchanged
// before a listing of it that found no other journal is trusted while the
// directory's modification time stays the same. File systems stamp that
// time with a clock that moves in steps of milliseconds, so a journal made
// just after a listing could leave the time as it was; one made more than
// a step after the last change cannot.
const quietFor = time.Second

// otherJournals lists the journals beside the database that are not this
// saver's own (live or not), wmu held. Every lease taken asks: when the
// last listing found none and the directory has not changed since (no
// file made, renamed or removed in it), a stat answers instead of reading
// the directory.
func (s *Saver) otherJournals() ([]string, error) {
	fi, statErr := os.Stat(filepath.Dir(s.path))
	if !s.none.IsZero() && statErr == nil && fi.ModTime().Equal(s.none) {
		return nil, nil
	}
	s.none = time.Time{}
	listed := time.Now()
	paths, err := filepath.Glob(globEscape(s.path) + journalSuffix + "*")
	if err != nil {
		return nil, err
	}
	out := paths[:0]
	for _, p := range paths {
		if !isJournalName(p[len(s.path)+len(journalSuffix):]) || s.j != nil && p == s.j.path {
			continue // a file moved aside, or this saver's own
		}
		out = append(out, p)
	}
	if len(out) == 0 && statErr == nil && listed.Sub(fi.ModTime()) > quietFor {
		s.none = fi.ModTime()
	}
	return out, nil
}

// recoverJournal replays the journal at path when its saver is gone (see
// recoverJournals).
func (s *Saver) recoverJournal(ctx context.Context, path string, lenient bool) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := s.wc.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		if lenient && isBusy(err) {
			return nil
		}
		return err
	}
	gen, replayed, err := s.replayLocked(ctx, f, path)
	if err != nil || !replayed {
		s.wc.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	if _, err := s.wc.ExecContext(ctx, "COMMIT"); err != nil {
		s.wc.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	// Deleted once its records are committed; its oplog row then names no
	// journal (a crash in between leaves a harmless row).
	if err := os.Remove(path); err != nil {
		return err
	}
	_, err = s.wc.ExecContext(ctx, `DELETE FROM oplog WHERE gen = ?`, gen)
	return err
}

// replayLocked replays the journal f (at path) in the open transaction
// when its file lock is free; replayed says whether there is anything to
// commit and then delete. A journal without a header is deleted here.
func (s *Saver) replayLocked(ctx context.Context, f *os.File, path string) (gen int64, replayed bool, err error) {
	ok, err := lockFile(f)
	if err != nil || !ok {
		return 0, false, err // nil when held: a live saver's
	}
	// Another recoverer may have replayed and deleted it between the
	// glob and the lock.
	if fi, err := f.Stat(); err != nil {
		return 0, false, err
	} else if pi, err := os.Stat(path); err != nil || !os.SameFile(fi, pi) {
		return 0, false, nil
	}
	gen, recs, err := readJournal(f)
	if errors.Is(err, errNoHeader) {
		return 0, false, os.Remove(path) // it holds nothing, and names no oplog row
	}
	if err != nil {
		return 0, false, err
	}
	if len(recs) > 0 {
		// The replay writes on this saver's own connection, which does not
		// change its data version: the tips it holds may predate what the
		// journal adds, so none is trusted any more.
		s.tips.Clear()
		if err := s.replayRecords(ctx, gen, recs); err != nil {
			return 0, false, err
		}
	}
	return gen, true, nil
}

// replayRecords applies the records of journal gen that the database does
// not hold yet, in the open transaction, and records how far the journal
// is in.
func (s *Saver) replayRecords(ctx context.Context, gen int64, recs []jrecord) error {
	var done int64
	if err := s.wc.QueryRowContext(ctx, `SELECT COALESCE((SELECT seq FROM oplog WHERE gen = ?), 0)`, gen).Scan(&done); err != nil {
		return err
	}
	last := done
	for _, r := range recs {
		if r.seq <= done {
			continue
		}
		if err := s.execStmts(ctx, r.stmts); err != nil {
			return fmt.Errorf("record %d: %w", r.seq, err)
		}
		last = r.seq
	}
	_, err := s.wc.ExecContext(ctx, oplogPut, gen, last)
	return err
}

// execStmts runs statements read back from a journal on the writer.
func (s *Saver) execStmts(ctx context.Context, stmts []jstmt) error {
	for _, st := range stmts {
		if st.named {
			p, ok := s.stmts[st.text]
			if !ok || strings.HasPrefix(st.text, "r:") {
				return fmt.Errorf("unknown statement %q", st.text)
			}
			if _, err := p.ExecContext(ctx, st.args...); err != nil {
				return err
			}
			continue
		}
		if _, err := s.wc.ExecContext(ctx, st.text, st.args...); err != nil {
			return err
		}
	}
	return nil
}

// isBusy says whether err is SQLite's "database is locked" (the busy
// timeout ran out waiting for another connection).
func isBusy(err error) bool {
	var e interface{ Code() int }
	return errors.As(err, &e) && e.Code()&0xff == sqliteBusy
}

// sqliteBusy is SQLITE_BUSY, the primary result code of a lock wait that
// timed out.
const sqliteBusy = 5

// isJournalName says whether tail (what follows journalSuffix) is a
// journal's: 16 lowercase hex digits, as createJournal names them.
func isJournalName(tail string) bool {
	if len(tail) != 16 {
		return false
	}
	for _, c := range tail {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// globEscape escapes the glob metacharacters of a path.
func globEscape(p string) string {
	var b strings.Builder
	for _, c := range p {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
