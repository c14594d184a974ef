package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deepagents-go/deepagents/checkpoint"
)

// unavailable marks err with checkpoint.ErrUnavailable when the server,
// not the operation, failed: it could not be reached or connected to, the
// connection broke or the call timed out, the server is shutting down or
// starting, has no connection to spare, or cancelled the transaction in a
// conflict that trying again resolves. The caller may try the same
// operation again later. A failure after ctx ended is the caller's, not
// the server's, and stays as it is.
func unavailable(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, checkpoint.ErrUnavailable) {
		return err
	}
	if storeFailed(err) {
		return fmt.Errorf("%w: %w", checkpoint.ErrUnavailable, err)
	}
	return err
}

func storeFailed(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", // admin shutdown, crash shutdown, cannot connect now
			"53300",          // too many connections
			"40001", "40P01": // serialization failure, deadlock: the transaction was rolled back
			return true
		}
		return strings.HasPrefix(pe.Code, "08") // connection exception
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}
