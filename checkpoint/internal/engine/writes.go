package engine

import (
	"context"
	"fmt"

	"github.com/deepagents-go/deepagents/checkpoint"
)

// NamespaceWrites reads every pending write of one namespace at once, for
// checkpoint.PendingReader.
type NamespaceWrites interface {
	// NamespaceWrites calls each with the checkpoint id and stored bytes
	// of every pending write of (thread, ns), ordered by checkpoint id,
	// call id and kind, until it returns an error.
	NamespaceWrites(ctx context.Context, thread, ns string, each func(cp string, data []byte) error) error
}

// PendingWrites reads and decodes the pending writes of every checkpoint of
// (thread, ns), by checkpoint id.
func PendingWrites(ctx context.Context, r NamespaceWrites, thread, ns string) (map[string][]checkpoint.Write, error) {
	out := map[string][]checkpoint.Write{}
	err := r.NamespaceWrites(ctx, thread, ns, func(cp string, data []byte) error {
		w, err := checkpoint.DecodeWrite(data)
		if err != nil {
			return fmt.Errorf("a write of checkpoint %q: %w", cp, err)
		}
		out[cp] = append(out[cp], w)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachKeyed calls each with the (text, bytes) columns of every row, until
// it returns an error.
func EachKeyed(rows Rows, each func(key string, data []byte) error) error {
	var key string
	var data []byte
	for rows.Next() {
		if err := rows.Scan(&key, &data); err != nil {
			return err
		}
		if err := each(key, data); err != nil {
			return err
		}
	}
	return rows.Err()
}

// WriteRow checks a pending write for the checkpoint at ref and returns the
// columns both savers store it under: its kind ("" is stored as
// checkpoint.KindResult) and its encoded bytes.
func WriteRow(ref checkpoint.Ref, w checkpoint.Write) (kind string, data []byte, err error) {
	if err := checkpoint.ValidateWrite(ref, &w); err != nil {
		return "", nil, err
	}
	if w.Kind == "" {
		w.Kind = checkpoint.KindResult
	}
	if data, err = checkpoint.EncodeWrite(w); err != nil {
		return "", nil, fmt.Errorf("%w: write: %v", checkpoint.ErrInvalid, err)
	}
	return w.Kind, data, nil
}

// NotStored is the error of a write whose checkpoint is not stored.
func NotStored(ref checkpoint.Ref) error {
	return fmt.Errorf("%w: checkpoint %q in thread %q", checkpoint.ErrNotFound, ref.ID, ref.ThreadID)
}
