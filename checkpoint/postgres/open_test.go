package postgres

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// openTest opens a saver in a fresh schema of the test server and closes it
// when the test ends.
func openTest(t *testing.T, opts Options) *Saver {
	t.Helper()
	dsn, schema := pgtest.Schema(t)
	opts.Schema = schema
	s, err := Open(t.Context(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestOpenBadAddressFailsClearly needs no server: each connection string
// must be refused with an error that says what went wrong, and a server that
// accepts the connection but never answers must not hang Open past the
// connect timeout: the connection string's when it has one, else
// Options.ConnectTimeout. A server that answers with an error is reported
// with what it said, not as out of reach.
func TestOpenBadAddressFailsClearly(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() { // accept and hold connections, never speaking
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	// A server that answers every login with an error, as PostgreSQL does
	// for a role that does not exist.
	refusing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer refusing.Close()
	go func() {
		for {
			c, err := refusing.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				be := pgproto3.NewBackend(c, c)
				if _, err := be.ReceiveStartupMessage(); err != nil {
					return
				}
				be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "28000", Message: `role "nobody" does not exist`})
				_ = be.Flush()
			}()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := closed.Addr().String()
	closed.Close()

	tests := []struct {
		name string
		dsn  string
		opts Options
		want []string // substrings of the error, all required
		not  []string // substrings the error must not have
	}{
		{"not a connection string", "postgres://user:secret@host:notaport/db", Options{}, []string{"bad connection string"}, nil},
		{"bad schema name", "postgres://u@127.0.0.1:1/db", Options{Schema: "a;drop table x"}, []string{`schema name "a;drop table x"`, "plain identifier"}, nil},
		{"nobody listening", "postgres://u@" + refusedAddr + "/db?sslmode=disable", Options{ConnectTimeout: 5 * time.Second}, []string{"cannot reach the server at 127.0.0.1"}, nil},
		{"server never answers", "postgres://u@" + silent.Addr().String() + "/db?sslmode=disable", Options{ConnectTimeout: 300 * time.Millisecond}, []string{"cannot reach the server", "connect timeout 300ms, the default", "timeout"}, nil},
		{"the URL's connect_timeout wins", "postgres://u@" + silent.Addr().String() + "/db?sslmode=disable&connect_timeout=1", Options{ConnectTimeout: 15 * time.Second}, []string{"cannot reach the server", "connect timeout 1s, from the connection string's connect_timeout"}, nil},
		{"the server refuses the login", "postgres://nobody:secret@" + refusing.Addr().String() + "/db?sslmode=disable", Options{}, []string{"the server at 127.0.0.1", "answered", `FATAL: role "nobody" does not exist (SQLSTATE 28000)`}, []string{"cannot reach"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A deadline far above the connect timeout: if Open ignored its
			// own timeout, this ends it and the error check below fails.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			s, err := Open(ctx, tt.dsn, tt.opts)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if ctx.Err() != nil {
				t.Fatalf("Open did not return before the test's own 20s deadline: %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q says %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// TestCloseReleasesPool opens a saver on the test server, uses a connection,
// closes the saver and checks that the pool holds no connection any more and
// that a later call fails instead of reconnecting.
func TestCloseReleasesPool(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	var one int
	if err := s.db.pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	if n := s.db.pool.Stat().TotalConns(); n == 0 {
		t.Fatal("the pool holds no connection after a query; the check below would prove nothing")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := s.db.pool.Stat().TotalConns(); n != 0 {
		t.Errorf("after Close the pool still holds %d connections", n)
	}
	if err := s.db.pool.Ping(ctx); err == nil {
		t.Error("Ping after Close succeeded")
	}
	if _, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Get after Close: err = %v, want a closed-saver error", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestMigrationsApplyOnceConcurrently opens several savers on one fresh
// schema at the same time: every Open succeeds and each schema version is
// recorded exactly once.
func TestMigrationsApplyOnceConcurrently(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	const n = 4
	errs := make(chan error, n)
	savers := make(chan *Saver, n)
	for range n {
		go func() {
			s, err := Open(t.Context(), dsn, Options{Schema: schema})
			errs <- err
			savers <- s
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Open: %v", err)
		}
		if s := <-savers; s != nil {
			defer s.Close()
		}
	}
	conn := pgtest.Connect(t)
	rows, err := conn.Query(t.Context(), "SELECT v, count(*) FROM "+schema+".deepagents_migrations GROUP BY v ORDER BY v")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []int
	for rows.Next() {
		var v, c int
		if err := rows.Scan(&v, &c); err != nil {
			t.Fatal(err)
		}
		if c != 1 {
			t.Errorf("migration %d recorded %d times", v, c)
		}
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(versions) != len(migrations) || (len(versions) > 0 && versions[len(versions)-1] != len(migrations)) {
		t.Errorf("recorded versions %v, want 1..%d", versions, len(migrations))
	}
}

// TestNewerSchemaRefused records a schema version above what this code
// knows: Open must refuse rather than write into tables it does not
// understand.
func TestNewerSchemaRefused(t *testing.T) {
	s := openTest(t, Options{})
	dsn := pgtest.DSN(t)
	if _, err := s.db.pool.Exec(t.Context(), "INSERT INTO deepagents_migrations (v) VALUES ($1)", len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), dsn, Options{Schema: s.db.opts.Schema})
	if err == nil || !strings.Contains(err.Error(), "newer than this program knows") {
		t.Fatalf("Open on a newer schema: err = %v, want a refusal", err)
	}
}

// TestCallTimeoutBoundsEveryCall blocks a call behind a row lock held by
// another connection: the call must give up at CallTimeout with an error
// that matches context.DeadlineExceeded, not wait for the lock.
func TestCallTimeoutBoundsEveryCall(t *testing.T) {
	s := openTest(t, Options{CallTimeout: 300 * time.Millisecond})
	ctx := t.Context()
	if _, err := s.Acquire(ctx, "th", "a", time.Unix(0, 0), time.Hour); err != nil {
		t.Fatal(err)
	}
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT 1 FROM leases WHERE thread_id = 'th' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	deadline, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = s.Renew(deadline, "th", "a", time.Unix(0, 0), time.Hour)
	if deadline.Err() != nil {
		t.Fatalf("Renew waited past the test's own 20s deadline: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Renew behind a held lock: err = %v, want context.DeadlineExceeded", err)
	}
}

// withParam returns dsn (a URL or key=value string) with one more
// connection parameter.
func withParam(t *testing.T, dsn, key, value string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " " + key + "=" + value
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("the test server's connection string is not a URL: %v", err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestReadOnlyRoleOpensCurrentSchema opens a schema that is up to date as
// a role that may only read it (USAGE on the schema, SELECT on its tables):
// Open must create nothing and succeed, and the saver must list threads.
// It needs a test server whose user may create roles; it skips otherwise.
func TestReadOnlyRoleOpensCurrentSchema(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	schema := s.db.opts.Schema
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	role := schema + "_reader"
	conn := pgtest.Connect(t)
	if _, err := conn.Exec(ctx, "CREATE ROLE "+role+" NOLOGIN"); err != nil {
		t.Skipf("the test server's user cannot create a role: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = conn.Exec(ctx, "DROP OWNED BY "+role)
		if _, err := conn.Exec(ctx, "DROP ROLE "+role); err != nil {
			t.Errorf("dropping role %s: %v", role, err)
		}
	})
	for _, q := range []string{
		"GRANT " + role + " TO CURRENT_USER",
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role,
		"GRANT SELECT ON ALL TABLES IN SCHEMA " + schema + " TO " + role,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Skipf("%s: %v", q, err)
		}
	}
	// The connection acts as the reader from its start.
	dsn := withParam(t, pgtest.DSN(t), "role", role)
	r, err := Open(ctx, dsn, Options{Schema: schema})
	if err != nil {
		t.Fatalf("Open as a reader of a current schema: %v", err)
	}
	defer r.Close()
	var who string
	if err := r.db.pool.QueryRow(ctx, "SELECT current_role").Scan(&who); err != nil || who != role {
		t.Fatalf("the saver's connection acts as %q (%v), not as the reader %q: the test proves nothing", who, err, role)
	}
	ts, err := r.Threads(ctx, checkpoint.ThreadsOptions{})
	if err != nil || len(ts) != 1 || ts[0].ID != "th" {
		t.Errorf("Threads as a reader: %v, %v", ts, err)
	}
}

// TestOpenNamesWhatIsMissing connects to the test server with a search
// path whose only schema does not exist, and to a database that does not
// exist: each error names what is missing.
func TestOpenNamesWhatIsMissing(t *testing.T) {
	dsn := pgtest.DSN(t)
	missing := pgtest.NewSchemaName()
	_, err := Open(t.Context(), withParam(t, dsn, "search_path", missing), Options{})
	if err == nil || !strings.Contains(err.Error(), "search_path="+missing) || !strings.Contains(err.Error(), "create the schema first") {
		t.Errorf("Open with search_path=%s: err = %v, want one naming the schema", missing, err)
	}
	if !strings.Contains(dsn, "://") {
		t.Skipf("%s is not a URL; skipping the missing database", pgtest.EnvDSN)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + missing
	_, err = Open(t.Context(), u.String(), Options{})
	if err == nil || !strings.Contains(err.Error(), `database "`+missing+`" does not exist`) || strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("Open on a missing database: err = %v, want what the server said", err)
	}
}

// TestNoCreateLeavesEmptyDatabase opens an empty schema, and one that does
// not exist, with NoCreate: Open fails with ErrNoTables and creates
// nothing. Once the tables are made, NoCreate opens them.
func TestNoCreateLeavesEmptyDatabase(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	ctx := t.Context()
	conn := pgtest.Connect(t)
	if _, err := Open(ctx, dsn, Options{Schema: schema, NoCreate: true}); !errors.Is(err, ErrNoTables) {
		t.Fatalf("NoCreate on an empty schema: err = %v, want ErrNoTables", err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1", schema).Scan(&n); err != nil || n != 0 {
		t.Errorf("after a NoCreate open the schema holds %d relations (%v), want none", n, err)
	}
	missing := pgtest.NewSchemaName()
	if _, err := Open(ctx, dsn, Options{Schema: missing, NoCreate: true}); !errors.Is(err, ErrNoTables) {
		t.Errorf("NoCreate on a missing schema: err = %v, want ErrNoTables", err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", missing).Scan(&n); err != nil || n != 0 {
		t.Errorf("a NoCreate open made schema %s (%v)", missing, err)
		_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+missing+" CASCADE")
	}
	s, err := Open(ctx, dsn, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, dsn, Options{Schema: schema, NoCreate: true})
	if err != nil {
		t.Fatalf("NoCreate on a current schema: %v", err)
	}
	s.Close()
}

// The schema upgrade at Open is one long transaction and gets more than a
// short CallTimeout: here another opener holds the migration lock for
// longer than the call timeout, and Open waits for it instead of failing.
func TestSchemaUpgradeOutlastsTheCallTimeout(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	key := migrationLockKey(schema)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		t.Fatal(err)
	}
	unlocked := make(chan struct{})
	defer func() { <-unlocked }() // before admin is closed
	go func() {
		defer close(unlocked)
		// Real time: the lock must be held for longer than the call
		// timeout, and that timeout runs on the wall clock against a real
		// server.
		time.Sleep(800 * time.Millisecond)
		_, _ = admin.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", key)
	}()
	s, err := Open(ctx, dsn, Options{Schema: schema, CallTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open while the migration lock was held for 0.8 s, with a 0.2 s call timeout: %v", err)
	}
	defer s.Close()
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "T", ID: "c1"}); err != nil {
		t.Fatal(err)
	}
}

// A schema whose thread tables are half there is damaged, not new: with
// the version table dropped, Open (NoCreate or not) fails naming the
// tables it found instead of reporting no tables (which lists no threads)
// or making them again; with a table of the current version dropped, Open
// fails naming it instead of failing call by call.
func TestHalfThereSchemaIsAnError(t *testing.T) {
	ctx := t.Context()
	conn := pgtest.Connect(t)
	for _, c := range []struct {
		name, drop, want string
	}{
		{"no version table", "deepagents_migrations", "no deepagents_migrations table"},
		{"a table missing", "cp_records", "lacks its tables cp_records"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn, schema := pgtest.Schema(t)
			s, err := Open(ctx, dsn, Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "c1"}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if _, err := conn.Exec(ctx, "DROP TABLE "+pgx.Identifier{schema, c.drop}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			for _, noCreate := range []bool{true, false} {
				s, err := Open(ctx, dsn, Options{Schema: schema, NoCreate: noCreate})
				if err == nil {
					s.Close()
					t.Fatalf("NoCreate=%v: opened", noCreate)
				}
				if errors.Is(err, ErrNoTables) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("NoCreate=%v: %v, want an error saying %q", noCreate, err, c.want)
				}
			}
		})
	}
}
