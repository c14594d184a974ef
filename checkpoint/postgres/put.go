package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/jackc/pgx/v5"
)

// blobLock is the advisory lock between writers that reference blobs
// (shared) and the sweep of unreferenced blobs (exclusive), so a blob a
// concurrent put is about to reference is never swept.
const blobLock int64 = 0x6465657061676e74 // "deepagnt"

// Put stores a step in one transaction. A checkpoint id already stored in
// the thread's namespace is left as it is.
func (s *Saver) Put(ctx context.Context, st checkpoint.Step) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := checkpoint.ValidateStep(&st); err != nil {
		return err
	}
	return s.db.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock_shared($1)", blobLock); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3)`,
			st.ThreadID, st.NS, st.ID).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		depth := 1
		usage := st.Usage
		title := ""
		if st.ParentID != "" {
			var pdepth int
			var pusage []byte
			err := tx.QueryRow(ctx, `SELECT depth, usage, title FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3`,
				st.ThreadID, st.NS, st.ParentID).Scan(&pdepth, &pusage, &title)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: parent checkpoint %q of %q in thread %q", checkpoint.ErrNotFound, st.ParentID, st.ID, st.ThreadID)
			}
			if err != nil {
				return err
			}
			var pu llm.Usage
			if err := json.Unmarshal(pusage, &pu); err != nil {
				return fmt.Errorf("usage of checkpoint %q is corrupt: %w", st.ParentID, err)
			}
			depth = pdepth + 1
			usage = pu.Add(st.Usage)
		}
		if title == "" {
			title = checkpoint.TitleOf(st.Messages)
		}
		md := st.Metadata
		if md == nil {
			md = map[string]string{}
		}
		mdJSON, err := json.Marshal(md)
		if err != nil {
			return err
		}
		stepUsage, _ := json.Marshal(st.Usage)
		total, _ := json.Marshal(usage)
		var vals []byte
		if len(st.Values) > 0 {
			if vals, err = json.Marshal(st.Values); err != nil {
				return fmt.Errorf("%w: values: %v", checkpoint.ErrInvalid, err)
			}
		}

		// A snapshot every SnapshotEvery steps of depth: the parent's
		// state with this step applied.
		var snap []byte
		var snapBase string
		var snapFiles map[string]fileRef
		if depth%s.db.opts.SnapshotEvery == 0 {
			l := &loaded{values: map[string]json.RawMessage{}, files: map[string]fileRef{}}
			if st.ParentID != "" {
				if l, err = loadState(ctx, tx, st.ThreadID, st.NS, st.ParentID, s.db.opts.SnapshotEvery); err != nil {
					return err
				}
			}
			applyValues(l.values, st.Values)
			for _, c := range st.Files {
				if c.File == nil {
					delete(l.files, c.Path)
				} else {
					l.files[c.Path] = fileRef{sha: hashOf(c.File.Content), created: fmtTime(c.File.CreatedAt), modified: fmtTime(c.File.ModifiedAt)}
				}
			}
			rec := snapshotRec{Chain: append(l.after, st.ID)}
			snapBase = l.base
			if len(l.values) > 0 {
				rec.Values = l.values
			}
			if snap, err = json.Marshal(rec); err != nil {
				return err
			}
			snapFiles = l.files
		}

		// A concurrent put of the same id may have won since the check
		// above: then this one does nothing, like a repeated put.
		tag, err := tx.Exec(ctx, `INSERT INTO checkpoints
			(thread_id, ns, id, parent_id, step, depth, metadata, status, at, step_usage, usage, title, vals, snapshot, snap_base)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
			ON CONFLICT (thread_id, ns, id) DO NOTHING`,
			st.ThreadID, st.NS, st.ID, st.ParentID, st.Step, depth, string(mdJSON), string(st.Status), fmtTime(st.Time),
			stepUsage, total, title, vals, snap, snapBase)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		batch := &pgx.Batch{}
		for i, m := range st.Messages {
			body, err := checkpoint.EncodeMessage(m)
			if err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			batch.Queue(`INSERT INTO messages (thread_id, ns, checkpoint_id, idx, body) VALUES ($1, $2, $3, $4, $5)`,
				st.ThreadID, st.NS, st.ID, i, body)
		}
		for i, c := range st.Files {
			if c.File == nil {
				batch.Queue(`INSERT INTO file_changes (thread_id, ns, checkpoint_id, idx, path) VALUES ($1, $2, $3, $4, $5)`,
					st.ThreadID, st.NS, st.ID, i, c.Path)
				continue
			}
			sha := hashOf(c.File.Content)
			batch.Queue(`INSERT INTO blobs (sha, content) VALUES ($1, $2) ON CONFLICT (sha) DO NOTHING`, sha, []byte(c.File.Content))
			batch.Queue(`INSERT INTO file_changes (thread_id, ns, checkpoint_id, idx, path, sha, created_at, modified_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
				st.ThreadID, st.NS, st.ID, i, c.Path, sha, fmtTime(c.File.CreatedAt), fmtTime(c.File.ModifiedAt))
		}
		for p, f := range snapFiles {
			batch.Queue(`INSERT INTO snapshot_files (thread_id, ns, checkpoint_id, path, sha, created_at, modified_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, st.ThreadID, st.NS, st.ID, p, f.sha, f.created, f.modified)
		}
		if batch.Len() > 0 {
			if err := tx.SendBatch(ctx, batch).Close(); err != nil {
				return err
			}
		}
		return nil
	})
}

// PutWrite stores one finished call's result for the checkpoint at ref,
// replacing an earlier write of the same call id and kind.
func (s *Saver) PutWrite(ctx context.Context, ref checkpoint.Ref, w checkpoint.Write) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := checkpoint.ValidateRef(ref, true); err != nil {
		return err
	}
	if err := checkpoint.ValidateWrite(ref, &w); err != nil {
		return err
	}
	kind := w.Kind
	if kind == "" {
		kind = checkpoint.KindResult
	}
	body, err := checkpoint.EncodeWrite(w)
	if err != nil {
		return fmt.Errorf("%w: write: %v", checkpoint.ErrInvalid, err)
	}
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	tag, err := s.db.pool.Exec(ctx, `INSERT INTO writes (thread_id, ns, checkpoint_id, call_id, kind, body)
		SELECT $1, $2, $3, $4, $5, $6
		WHERE EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3)
		ON CONFLICT (thread_id, ns, checkpoint_id, call_id, kind) DO UPDATE SET body = excluded.body`,
		ref.ThreadID, ref.NS, ref.ID, w.CallID, kind, body)
	if err != nil {
		return s.wrap(ctx, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: checkpoint %q in thread %q", checkpoint.ErrNotFound, ref.ID, ref.ThreadID)
	}
	return nil
}
