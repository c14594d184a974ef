// Package pgtest finds the PostgreSQL server the project's tests run
// against and gives each test a schema of its own on it.
//
// The server's address comes from the DEEPAGENTS_TEST_POSTGRES environment
// variable, a pgx connection string (URL or key=value). When it is unset the
// tests that need a server skip, saying how to provide one; CI's .ci/run
// always starts a server and also sets DEEPAGENTS_TEST_POSTGRES_REQUIRED,
// which turns that skip into a failure so CI never silently skips them.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable holding the test server's address.
const EnvDSN = "DEEPAGENTS_TEST_POSTGRES"

// EnvRequired names the environment variable that, when non-empty, makes a
// missing server a test failure instead of a skip.
const EnvRequired = "DEEPAGENTS_TEST_POSTGRES_REQUIRED"

// callTimeout bounds every statement pgtest runs, so a server that stopped
// answering fails the test instead of hanging it.
const callTimeout = 30 * time.Second

// DSN returns the test server's connection string, or skips t (fails it when
// EnvRequired is set) when none is configured.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn != "" {
		return dsn
	}
	msg := "no PostgreSQL test server: set " + EnvDSN + " to a connection string such as " +
		"postgres://user:password@localhost:5432/dbname?sslmode=disable " +
		"(CI's .ci/run always starts a server and sets it)"
	if os.Getenv(EnvRequired) != "" {
		t.Fatal(msg + "; " + EnvRequired + " is set, so the server is required")
	}
	t.Skip(msg)
	return ""
}

// Connect opens one connection to the test server (skipping as DSN does)
// and closes it when the test ends.
func Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	dsn := DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to the PostgreSQL test server (%s): %v", EnvDSN, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		_ = conn.Close(ctx)
	})
	return conn
}

// Schema creates an empty schema with a fresh random name on the test
// server and drops it, with everything in it, when the test ends. Tests of
// packages that run in parallel each get their own, so they never see each
// other's tables. It returns the server's connection string and the
// schema's name (a plain lower-case identifier that needs no quoting).
func Schema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = DSN(t)
	schema = NewSchemaName()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to the PostgreSQL test server (%s): %v", EnvDSN, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("creating test schema %s: %v", schema, err)
	}
	t.Cleanup(func() { dropSchema(t, dsn, schema) })
	return dsn, schema
}

func dropSchema(t testing.TB, dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("connecting to drop test schema %s: %v", schema, err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("dropping test schema %s: %v", schema, err)
	}
}

// NewSchemaName returns a fresh name for a test schema: a fixed prefix and
// 64 random bits in hex, so names from parallel test processes never meet.
func NewSchemaName() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return fmt.Sprintf("deepagents_test_%s", hex.EncodeToString(b[:]))
}
