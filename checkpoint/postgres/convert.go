package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/jackc/pgx/v5"
)

// fmtTime and parseTime are the text form of times in the version 1 and 2
// tables: RFC 3339 with nanoseconds, "" for the zero time.
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

// oldCheckpoint is a row of the version 1 and 2 checkpoints table.
type oldCheckpoint struct {
	thread, ns, id, parent string
	step                   int
	metadata               map[string]string
	status, at             string
	stepUsage, usage       []byte
	vals, snapshot         []byte
}

// convertV2 moves what the version 1 and 2 tables hold into the shared
// record format, checkpoint by checkpoint in the order they were put, and
// drops the old tables. Each old checkpoint becomes the step it recorded (its
// messages, file changes and values); one whose parent a prune removed was
// rewritten by that prune to hold its whole history and becomes a snapshot
// that keeps its parent's id and its usage total.
func convertV2(ctx context.Context, tx pgx.Tx, opts Options) error {
	every := opts.withDefaults().SnapshotEvery
	rows, err := tx.Query(ctx, `SELECT thread_id, ns, id, parent_id, step, metadata, status, at, step_usage, usage, vals, snapshot
		FROM checkpoints ORDER BY seq`)
	if err != nil {
		return err
	}
	var olds []oldCheckpoint
	for rows.Next() {
		var o oldCheckpoint
		if err := rows.Scan(&o.thread, &o.ns, &o.id, &o.parent, &o.step, &o.metadata, &o.status, &o.at, &o.stepUsage, &o.usage, &o.vals, &o.snapshot); err != nil {
			rows.Close()
			return err
		}
		olds = append(olds, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	type key struct{ thread, ns, id string }
	recs := map[key]*checkpoint.Record{}
	next := map[[2]string]int64{}
	for _, o := range olds {
		st, rebased, err := oldStep(ctx, tx, o)
		if err != nil {
			return fmt.Errorf("converting checkpoint %q of thread %q: %w", o.id, o.thread, err)
		}
		var parent *checkpoint.Record
		if !rebased && o.parent != "" {
			parent = recs[key{o.thread, o.ns, o.parent}]
		}
		view, err := checkpoint.ParentView(ctx, parent, every, func(_ context.Context, id string) (*checkpoint.Record, error) {
			if r := recs[key{o.thread, o.ns, id}]; r != nil {
				return r, nil
			}
			return nil, fmt.Errorf("%w: checkpoint %q", checkpoint.ErrNotFound, id)
		})
		if err != nil {
			return err
		}
		nk := [2]string{o.thread, o.ns}
		b, err := checkpoint.Build(st, parent, view, next[nk], every)
		if err != nil {
			return fmt.Errorf("converting checkpoint %q of thread %q: %w", o.id, o.thread, err)
		}
		if rebased {
			b.Record.ParentID = o.parent
			if err := json.Unmarshal(o.usage, &b.Record.Usage); err != nil {
				return fmt.Errorf("usage of checkpoint %q is corrupt: %w", o.id, err)
			}
		}
		raw, err := checkpoint.Encode(b.Record)
		if err != nil {
			return err
		}
		if err := (store{tx}).Insert(ctx, b.Record, raw, b.Messages, b.Blobs, b.Record.Refs()); err != nil {
			return err
		}
		if b.Record.Snapshot != nil {
			if err := engine.PackChunks(ctx, store{tx}, o.thread, o.ns); err != nil {
				return err
			}
		}
		next[nk] = b.Record.Messages.To
		recs[key{o.thread, o.ns, o.id}] = b.Record
	}
	if _, err := tx.Exec(ctx, `INSERT INTO cp_writes (thread_id, ns, cp, call_id, kind, data)
		SELECT thread_id, ns, checkpoint_id, call_id, kind, body FROM writes`); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `DROP TABLE writes, messages, file_changes, snapshot_files, checkpoints, blobs`)
	return err
}

// oldStep rebuilds the step an old checkpoint recorded; rebased says it is
// a pruned history's first survivor, whose step is its whole state.
func oldStep(ctx context.Context, tx pgx.Tx, o oldCheckpoint) (*checkpoint.Step, bool, error) {
	st := &checkpoint.Step{ThreadID: o.thread, NS: o.ns, ID: o.id, Step: o.step, Status: checkpoint.Status(o.status)}
	if len(o.metadata) > 0 {
		st.Metadata = o.metadata
	}
	var err error
	if st.Time, err = parseTime(o.at); err != nil {
		return nil, false, fmt.Errorf("time is corrupt: %w", err)
	}
	if err := json.Unmarshal(o.stepUsage, &st.Usage); err != nil {
		return nil, false, fmt.Errorf("usage is corrupt: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT body FROM messages WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 ORDER BY idx`, o.thread, o.ns, o.id)
	if err != nil {
		return nil, false, err
	}
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			rows.Close()
			return nil, false, err
		}
		m, err := msgcodec.DecodeMessage(body)
		if err != nil {
			rows.Close()
			return nil, false, err
		}
		st.Messages = append(st.Messages, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	var parentKept bool
	if o.parent != "" {
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3)`,
			o.thread, o.ns, o.parent).Scan(&parentKept); err != nil {
			return nil, false, err
		}
	}
	rebased := o.parent != "" && !parentKept
	var q string
	if rebased {
		q = `SELECT f.path, c.content, f.created_at, f.modified_at FROM snapshot_files f JOIN blobs c ON c.sha = f.sha
			WHERE f.thread_id = $1 AND f.ns = $2 AND f.checkpoint_id = $3 ORDER BY f.path`
		var snap struct {
			Values map[string]json.RawMessage `json:"values"`
		}
		if len(o.snapshot) > 0 {
			if err := json.Unmarshal(o.snapshot, &snap); err != nil {
				return nil, false, fmt.Errorf("snapshot is corrupt: %w", err)
			}
		}
		st.Values = snap.Values
	} else {
		st.ParentID = o.parent
		q = `SELECT f.path, c.content, f.created_at, f.modified_at FROM file_changes f LEFT JOIN blobs c ON c.sha = f.sha
			WHERE f.thread_id = $1 AND f.ns = $2 AND f.checkpoint_id = $3 ORDER BY f.idx`
		if len(o.vals) > 0 {
			if err := json.Unmarshal(o.vals, &st.Values); err != nil {
				return nil, false, fmt.Errorf("values are corrupt: %w", err)
			}
		}
	}
	frows, err := tx.Query(ctx, q, o.thread, o.ns, o.id)
	if err != nil {
		return nil, false, err
	}
	defer frows.Close()
	for frows.Next() {
		var path, created, modified string
		var content []byte
		if err := frows.Scan(&path, &content, &created, &modified); err != nil {
			return nil, false, err
		}
		if content == nil {
			st.Files = append(st.Files, vfs.Change{Path: path})
			continue
		}
		c, err1 := parseTime(created)
		m, err2 := parseTime(modified)
		if err1 != nil || err2 != nil {
			return nil, false, fmt.Errorf("times of %s are corrupt", path)
		}
		st.Files = append(st.Files, vfs.Change{Path: path, File: &vfs.File{Content: string(content), CreatedAt: c, ModifiedAt: m}})
	}
	if err := frows.Err(); err != nil {
		return nil, false, err
	}
	return st, rebased, nil
}
