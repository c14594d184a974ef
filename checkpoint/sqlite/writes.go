package sqlite

import (
	"context"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
)

var (
	_ checkpoint.PendingReader = (*Saver)(nil)
	_ engine.NamespaceWrites   = querier{}
)

// PendingWrites implements checkpoint.PendingReader, in one query.
func (s *Saver) PendingWrites(ctx context.Context, threadID, ns string) (map[string][]checkpoint.Write, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateRef(checkpoint.Ref{ThreadID: threadID, NS: ns}, false); err != nil {
		return nil, err
	}
	var out map[string][]checkpoint.Write
	err := s.readTx(ctx, func(q querier) error {
		var err error
		out, err = engine.PendingWrites(ctx, q, threadID, ns)
		return err
	})
	return out, err
}

// NamespaceWrites implements engine.NamespaceWrites. The writes' primary
// key (thread, ns, cp, call_id, kind) gives the rows in order.
func (q querier) NamespaceWrites(ctx context.Context, thread, ns string, each func(cp string, data []byte) error) error {
	rows, err := q.tx.QueryContext(ctx, `SELECT cp, data FROM writes WHERE thread = ? AND ns = ? ORDER BY cp, call_id, kind`, thread, ns)
	if err != nil {
		return err
	}
	defer rows.Close()
	return engine.EachKeyed(rows, each)
}
