package sqlite

import (
	"path/filepath"
	"testing"
)

// The saver's default is synchronous=NORMAL, on the writer and the
// readers; FULL is taken when asked for.
func TestSynchronousSetting(t *testing.T) {
	for _, c := range []struct {
		opt  string
		want int
	}{{"", 1}, {"normal", 1}, {"FULL", 2}} {
		s := openOpts(t, filepath.Join(t.TempDir(), "s.db"), Options{Synchronous: c.opt})
		var w, r int
		if err := s.wc.QueryRowContext(t.Context(), `PRAGMA synchronous`).Scan(&w); err != nil {
			t.Fatal(err)
		}
		if err := s.r.QueryRow(`PRAGMA synchronous`).Scan(&r); err != nil {
			t.Fatal(err)
		}
		if w != c.want || r != c.want {
			t.Errorf("Synchronous %q: writer %d, reader %d; want %d", c.opt, w, r, c.want)
		}
	}
}
