package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// querier is what both the pool and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// snapshotRec is a snapshot's record besides its files: the ids of the
// checkpoints whose messages make up the history after the previous
// snapshot (the checkpoints row's snap_base), oldest first and ending with
// the snapshot's own, and the full set of values.
type snapshotRec struct {
	Chain  []string                   `json:"chain"`
	Values map[string]json.RawMessage `json:"values,omitempty"`
}

// fileRef is a file as the state keeps it while rebuilding: its content's
// hash and its times.
type fileRef struct {
	sha               []byte
	created, modified string
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

func hashOf(content string) []byte {
	h := sha256.Sum256([]byte(content))
	return h[:]
}

// longChain is the history length from which chainMessages reads the whole
// namespace instead of listing the ids.
const longChain = 256

// loaded is a rebuilt state plus what a following snapshot needs.
type loaded struct {
	// chain is every checkpoint id of the history, oldest first.
	chain []string
	// base is the snapshot the rebuild started from ("" for the root) and
	// after the ids of the history that follow it.
	base   string
	after  []string
	values map[string]json.RawMessage
	files  map[string]fileRef
}

// loadState rebuilds the state at checkpoint id of (thread, ns): it walks
// up the parents to the nearest snapshot (or the root), starts from that
// snapshot and applies each later step's values and file changes in order.
func loadState(ctx context.Context, q querier, thread, ns, id string, every int) (*loaded, error) {
	ws, err := walkToSnapshot(ctx, q, thread, ns, id, every)
	if err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, fmt.Errorf("%w: checkpoint %q", checkpoint.ErrNotFound, id)
	}
	st := &loaded{values: map[string]json.RawMessage{}, files: map[string]fileRef{}}
	var deltas []string
	if ws[0].snap != nil {
		var rec snapshotRec
		if err := json.Unmarshal(ws[0].snap, &rec); err != nil {
			return nil, fmt.Errorf("snapshot of checkpoint %q is corrupt: %w", ws[0].id, err)
		}
		chain, err := snapshotChain(ctx, q, thread, ns, ws[0].id)
		if err != nil {
			return nil, err
		}
		st.chain = chain
		st.base = ws[0].id
		for k, v := range rec.Values {
			st.values[k] = v
		}
		frows, err := q.Query(ctx, `SELECT path, sha, created_at, modified_at FROM snapshot_files
			WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`, thread, ns, ws[0].id)
		if err != nil {
			return nil, err
		}
		for frows.Next() {
			var path string
			var f fileRef
			if err := frows.Scan(&path, &f.sha, &f.created, &f.modified); err != nil {
				frows.Close()
				return nil, err
			}
			st.files[path] = f
		}
		frows.Close()
		if err := frows.Err(); err != nil {
			return nil, err
		}
		ws = ws[1:]
	}
	for _, w := range ws {
		st.chain = append(st.chain, w.id)
		st.after = append(st.after, w.id)
		deltas = append(deltas, w.id)
		if w.vals != nil {
			var vals map[string]json.RawMessage
			if err := json.Unmarshal(w.vals, &vals); err != nil {
				return nil, fmt.Errorf("values of checkpoint %q are corrupt: %w", w.id, err)
			}
			applyValues(st.values, vals)
		}
	}
	if len(deltas) > 0 {
		pos := map[string]int{}
		for i, d := range deltas {
			pos[d] = i
		}
		frows, err := q.Query(ctx, `SELECT checkpoint_id, idx, path, sha, created_at, modified_at FROM file_changes
			WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = ANY($3)`, thread, ns, deltas)
		if err != nil {
			return nil, err
		}
		type change struct {
			pos, idx int
			path     string
			f        fileRef
		}
		var cs []change
		for frows.Next() {
			var c change
			var cp string
			if err := frows.Scan(&cp, &c.idx, &c.path, &c.f.sha, &c.f.created, &c.f.modified); err != nil {
				frows.Close()
				return nil, err
			}
			c.pos = pos[cp]
			cs = append(cs, c)
		}
		frows.Close()
		if err := frows.Err(); err != nil {
			return nil, err
		}
		sort.Slice(cs, func(i, j int) bool {
			if cs[i].pos != cs[j].pos {
				return cs[i].pos < cs[j].pos
			}
			return cs[i].idx < cs[j].idx
		})
		for _, c := range cs {
			if c.f.sha == nil {
				delete(st.files, c.path)
			} else {
				st.files[c.path] = c.f
			}
		}
	}
	return st, nil
}

// snapshotChain expands the history of snapshot id: the id lists of it and
// of the snapshots before it (following snap_base), oldest first. A base
// that was pruned away ends the walk: its history lives in the survivors.
func snapshotChain(ctx context.Context, q querier, thread, ns, id string) ([]string, error) {
	// All of the namespace's snapshots in one indexed query (a few hundred
	// rows for a long thread), then the walk along snap_base here: a
	// recursive query's plan went bad as the table grew (a sequential scan
	// per level, hundreds of milliseconds at 10,000 checkpoints).
	rows, err := q.Query(ctx, `SELECT id, snap_base, snapshot FROM checkpoints
		WHERE thread_id = $1 AND ns = $2 AND snapshot IS NOT NULL`, thread, ns)
	if err != nil {
		return nil, err
	}
	type snap struct {
		base string
		body []byte
	}
	snaps := map[string]snap{}
	for rows.Next() {
		var sid string
		var sn snap
		if err := rows.Scan(&sid, &sn.base, &sn.body); err != nil {
			rows.Close()
			return nil, err
		}
		snaps[sid] = sn
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var bodies [][]byte
	for cur, ok := snaps[id]; ok; cur, ok = snaps[cur.base] {
		bodies = append(bodies, cur.body)
		if cur.base == "" || len(bodies) > len(snaps) {
			break
		}
	}
	var chain []string
	for i := len(bodies) - 1; i >= 0; i-- {
		var rec snapshotRec
		if err := json.Unmarshal(bodies[i], &rec); err != nil {
			return nil, fmt.Errorf("a snapshot before checkpoint %q is corrupt: %w", id, err)
		}
		chain = append(chain, rec.Chain...)
	}
	return chain, nil
}

// walked is one checkpoint of a walk to the nearest snapshot.
type walked struct {
	id, parent string
	snap, vals []byte
}

// walkToSnapshot returns checkpoint id and its ancestors up to and
// including the nearest snapshot (or the root), oldest first. It reads the
// namespace's checkpoints put at or before the one it needs, newest first,
// every+1 at a time (a linear history's walk is one query), and follows the
// parent links here.
func walkToSnapshot(ctx context.Context, q querier, thread, ns, id string, every int) ([]walked, error) {
	var out []walked
	need := id
	for need != "" {
		rows, err := q.Query(ctx, `SELECT id, parent_id, snapshot, vals FROM checkpoints
			WHERE thread_id = $1 AND ns = $2 AND seq <= (SELECT seq FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3)
			ORDER BY seq DESC LIMIT $4`, thread, ns, need, every+1)
		if err != nil {
			return nil, err
		}
		batch := map[string]walked{}
		for rows.Next() {
			var w walked
			if err := rows.Scan(&w.id, &w.parent, &w.snap, &w.vals); err != nil {
				rows.Close()
				return nil, err
			}
			batch[w.id] = w
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if _, ok := batch[need]; !ok {
			if len(out) == 0 {
				return nil, fmt.Errorf("%w: checkpoint %q", checkpoint.ErrNotFound, id)
			}
			break // a parent that is gone ends the walk
		}
		for {
			w, ok := batch[need]
			if !ok {
				break // not in this batch: read the next one from need
			}
			out = append(out, w)
			if w.snap != nil || w.parent == "" || len(out) > 1<<20 {
				need = ""
				break
			}
			need = w.parent
		}
	}
	slices.Reverse(out)
	return out, nil
}

func applyValues(dst, set map[string]json.RawMessage) {
	for k, v := range set {
		if len(v) == 0 || string(v) == "null" {
			delete(dst, k)
		} else {
			dst[k] = v
		}
	}
}

// materialise turns a loaded state into a checkpoint.State: messages of
// the chain in order, file contents fetched by hash.
func materialise(ctx context.Context, q querier, thread, ns string, l *loaded) (checkpoint.State, error) {
	var st checkpoint.State
	msgs, err := chainMessages(ctx, q, thread, ns, l.chain)
	if err != nil {
		return st, err
	}
	st.Messages = msgs
	if len(l.values) > 0 {
		st.Values = l.values
	}
	if len(l.files) > 0 {
		var shas [][]byte
		seen := map[string]bool{}
		for _, f := range l.files {
			if !seen[string(f.sha)] {
				seen[string(f.sha)] = true
				shas = append(shas, f.sha)
			}
		}
		rows, err := q.Query(ctx, `SELECT sha, content FROM blobs WHERE sha = ANY($1)`, shas)
		if err != nil {
			return st, err
		}
		content := map[string]string{}
		for rows.Next() {
			var sha, c []byte
			if err := rows.Scan(&sha, &c); err != nil {
				rows.Close()
				return st, err
			}
			content[string(sha)] = string(c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return st, err
		}
		st.Files = make(map[string]vfs.File, len(l.files))
		for p, f := range l.files {
			c, ok := content[string(f.sha)]
			if !ok {
				return st, fmt.Errorf("content of %s is missing from the store", p)
			}
			created, err1 := parseTime(f.created)
			modified, err2 := parseTime(f.modified)
			if err1 != nil || err2 != nil {
				return st, fmt.Errorf("times of %s are corrupt", p)
			}
			st.Files[p] = vfs.File{Content: c, CreatedAt: created, ModifiedAt: modified}
		}
	}
	return st, nil
}

// chainMessages returns the messages of the checkpoints in chain, in chain
// order and, inside one checkpoint, in the order they were appended.
func chainMessages(ctx context.Context, q querier, thread, ns string, chain []string) ([]llm.Message, error) {
	pos := make(map[string]int, len(chain))
	for i, id := range chain {
		pos[id] = i
	}
	// A long chain is most of the namespace: reading the namespace's
	// messages by index and skipping other branches beats matching against
	// thousands of ids.
	var rows pgx.Rows
	var err error
	if len(chain) > longChain {
		rows, err = q.Query(ctx, `SELECT checkpoint_id, idx, body FROM messages
			WHERE thread_id = $1 AND ns = $2`, thread, ns)
	} else {
		rows, err = q.Query(ctx, `SELECT checkpoint_id, idx, body FROM messages
			WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = ANY($3)`, thread, ns, chain)
	}
	if err != nil {
		return nil, err
	}
	type rec struct {
		pos, idx int
		m        llm.Message
	}
	var rs []rec
	for rows.Next() {
		var cp string
		var r rec
		var body []byte
		if err := rows.Scan(&cp, &r.idx, &body); err != nil {
			rows.Close()
			return nil, err
		}
		p, ok := pos[cp]
		if !ok {
			continue // another branch's message
		}
		if r.m, err = checkpoint.DecodeMessage(body); err != nil {
			rows.Close()
			return nil, fmt.Errorf("a message of checkpoint %q is corrupt: %w", cp, err)
		}
		r.pos = p
		rs = append(rs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].pos != rs[j].pos {
			return rs[i].pos < rs[j].pos
		}
		return rs[i].idx < rs[j].idx
	})
	if len(rs) == 0 {
		return nil, nil
	}
	out := make([]llm.Message, len(rs))
	for i, r := range rs {
		out[i] = r.m
	}
	return out, nil
}
