package pgtest

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"testing"
	"time"
)

// TestServerAnswers proves the configured server is reachable and answers
// a query: the check CI relies on to know .ci/run's server is up.
func TestServerAnswers(t *testing.T) {
	conn := Connect(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("SELECT 1: %v", err)
	}
	if one != 1 {
		t.Fatalf("SELECT 1 returned %d", one)
	}
}

// TestSchemaIsPrivateAndDropped checks that Schema makes a schema a test can
// create tables in, and that the schema is gone once the test's cleanups ran.
func TestSchemaIsPrivateAndDropped(t *testing.T) {
	conn := Connect(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		var dsn string
		dsn, name = Schema(t)
		if dsn == "" {
			t.Fatal("Schema returned an empty connection string")
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, "CREATE TABLE "+name+".probe (x int)"); err != nil {
			t.Fatalf("creating a table in the test schema: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("schema %s still exists after the test ended", name)
	}
}

func TestNewSchemaNameIsFreshAndPlain(t *testing.T) {
	plain := regexp.MustCompile(`^deepagents_test_[0-9a-f]{16}$`)
	a, b := NewSchemaName(), NewSchemaName()
	for _, n := range []string{a, b} {
		if !plain.MatchString(n) {
			t.Errorf("schema name %q is not of the form deepagents_test_<16 hex digits>", n)
		}
	}
	if a == b {
		t.Errorf("two schema names are equal: %q", a)
	}
}

// TestMissingServerSkipsOrFails runs DSN with the variable unset: the test
// must skip with a message naming the variable, or fail when the server is
// required.
func TestMissingServerSkipsOrFails(t *testing.T) {
	for _, required := range []string{"", "1"} {
		t.Run("required="+required, func(t *testing.T) {
			t.Setenv(EnvDSN, "")
			t.Setenv(EnvRequired, required)
			rec := &recorder{TB: t}
			done := make(chan struct{})
			go func() { // Skip and Fatal end the goroutine that calls them
				defer close(done)
				DSN(rec)
			}()
			<-done
			if !regexp.MustCompile(`DEEPAGENTS_TEST_POSTGRES to a connection string`).MatchString(rec.msg) {
				t.Errorf("message %q does not say how to set DEEPAGENTS_TEST_POSTGRES", rec.msg)
			}
			if required == "" && (!rec.skipped || rec.failed) {
				t.Errorf("with no server and none required: skipped=%v failed=%v, want a skip", rec.skipped, rec.failed)
			}
			if required != "" && (!rec.failed || rec.skipped) {
				t.Errorf("with no server but one required: skipped=%v failed=%v, want a failure", rec.skipped, rec.failed)
			}
		})
	}
}

// recorder stands in for a testing.TB and records Skip and Fatal instead of
// acting on the real test.
type recorder struct {
	testing.TB
	msg             string
	skipped, failed bool
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.msg, r.skipped = fmt.Sprint(args...), true
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) {
	r.msg, r.failed = fmt.Sprint(args...), true
	runtime.Goexit()
}
