package postgres

import (
	"context"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
)

var (
	_ checkpoint.PendingReader = (*Saver)(nil)
	_ engine.NamespaceWrites   = store{}
)

// PendingWrites implements checkpoint.PendingReader, in one query.
func (s *Saver) PendingWrites(ctx context.Context, threadID, ns string) (map[string][]checkpoint.Write, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateRef(checkpoint.Ref{ThreadID: threadID, NS: ns}, false); err != nil {
		return nil, err
	}
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	out, err := engine.PendingWrites(ctx, store{s.db.pool}, threadID, ns)
	if err != nil {
		return nil, s.wrap(ctx, err)
	}
	return out, nil
}

// NamespaceWrites implements engine.NamespaceWrites. The writes' primary
// key (thread_id, ns, cp, call_id, kind) gives the rows in order.
func (s store) NamespaceWrites(ctx context.Context, thread, ns string, each func(cp string, data []byte) error) error {
	rows, err := s.q.Query(ctx, `SELECT cp, data FROM cp_writes WHERE thread_id = $1 AND ns = $2 ORDER BY cp, call_id, kind`, thread, ns)
	if err != nil {
		return err
	}
	defer rows.Close()
	return engine.EachKeyed(rows, each)
}
