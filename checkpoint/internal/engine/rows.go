package engine

import (
	"slices"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
)

// Rows is what the result sets of both drivers (database/sql and pgx)
// offer; the helpers below read the few row shapes the savers' queries
// return. The caller closes the rows. Both drivers copy a bytes column into
// a new slice on every Scan, so the helpers scan into variables declared
// once: a call through the interface makes them escape, and declared in
// the loop they would cost an allocation a row.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// EachBytes calls each with the single bytes column of every row, until it
// returns false.
func EachBytes(rows Rows, each func([]byte) bool) error {
	var data []byte
	for rows.Next() {
		if err := rows.Scan(&data); err != nil {
			return err
		}
		if !each(data) {
			break
		}
	}
	return rows.Err()
}

// Bytes returns the single bytes column of every row.
func Bytes(rows Rows) ([][]byte, error) {
	var out [][]byte
	err := EachBytes(rows, func(data []byte) bool {
		out = append(out, data)
		return true
	})
	return out, err
}

// Strings returns the single text column of every row.
func Strings(rows Rows) ([]string, error) {
	var out []string
	var s string
	for rows.Next() {
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Ranges returns the (from, to) columns of every row as ranges.
func Ranges(rows Rows) ([]checkpoint.Range, error) {
	var out []checkpoint.Range
	var r checkpoint.Range
	for rows.Next() {
		if err := rows.Scan(&r.From, &r.To); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// EachChunk calls add with the (from, to, data) columns of every row.
func EachChunk(rows Rows, add func(msgcodec.Chunk)) error {
	var c msgcodec.Chunk
	for rows.Next() {
		if err := rows.Scan(&c.From, &c.To, &c.Data); err != nil {
			return err
		}
		add(c)
	}
	return rows.Err()
}

// EachRecord calls each with the (seq, record) columns of every row.
func EachRecord(rows Rows, each func(seq int64, raw []byte) error) error {
	var seq int64
	var raw []byte
	for rows.Next() {
		if err := rows.Scan(&seq, &raw); err != nil {
			return err
		}
		if err := each(seq, raw); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Unpacked reads rows of (from, to, packed), newest first, up to the first
// packed one, and returns those chunks oldest first, without their data.
func Unpacked(rows Rows) ([]msgcodec.Chunk, error) {
	var tail []msgcodec.Chunk // newest first
	var c msgcodec.Chunk
	var packed bool
	for rows.Next() {
		if err := rows.Scan(&c.From, &c.To, &packed); err != nil {
			return nil, err
		}
		if packed {
			break
		}
		tail = append(tail, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Reverse(tail)
	return tail, nil
}
