package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// FuzzTimeText checks that the text form of times the saver stores gives
// back the same instant, to the nanosecond, for any time, and that text
// that is not such a time is refused rather than misread.
func FuzzTimeText(f *testing.F) {
	f.Add(int64(0), int64(0), "")
	f.Add(int64(1796288400), int64(123456789), "2026-12-03T09:00:00Z")
	f.Add(int64(-62135596800), int64(1), "not a time")
	f.Add(int64(253402300799), int64(999999999), "2026-12-03T09:00:00.5+01:00")
	f.Fuzz(func(t *testing.T, sec, nsec int64, text string) {
		in := time.Unix(sec, nsec)
		if in.Year() < 0 || in.Year() > 9999 {
			return // RFC 3339 has four-digit years only
		}
		s := fmtTime(in)
		out, err := parseTime(s)
		if err != nil {
			t.Fatalf("parseTime(fmtTime(%v)) = %q: %v", in, s, err)
		}
		if !out.Equal(in) {
			t.Fatalf("time %v came back as %v (via %q)", in, out, s)
		}
		if got, err := parseTime(text); err == nil && text != "" && fmtTime(got) == "" {
			t.Fatalf("parseTime(%q) accepted a zero time", text)
		}
	})
}

// FuzzSchemaName checks that every schema name Open accepts is a plain
// identifier that quoting leaves unchanged, so it can never change the
// meaning of a statement, and that Open refuses the rest before connecting.
func FuzzSchemaName(f *testing.F) {
	for _, s := range []string{"", "public", "deepagents_test_0123456789abcdef", "a;drop table x", "Ünïcode", `q"uote`, strings.Repeat("a", 64), "_x1", "1abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !plainIdent.MatchString(name) {
			if name == "" {
				return
			}
			_, err := Open(t.Context(), "postgres://u@127.0.0.1:1/db", Options{Schema: name})
			if err == nil || !strings.Contains(err.Error(), "not a plain identifier") {
				t.Fatalf("schema %q: Open err = %v, want a refusal of the name", name, err)
			}
			return
		}
		if len(name) > 63 {
			t.Fatalf("accepted schema name %q is longer than PostgreSQL's 63 bytes", name)
		}
		if got := (pgx.Identifier{name}).Sanitize(); got != `"`+name+`"` {
			t.Fatalf("accepted schema name %q needs escaping: %s", name, got)
		}
		for _, r := range name {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				t.Fatalf("accepted schema name %q has %q", name, r)
			}
		}
	})
}
