package engine

import "testing"

// The file table's queries are written once with ? placeholders; PostgreSQL
// gets them numbered in order.
func TestNumbered(t *testing.T) {
	for q, want := range map[string]string{
		"":                          "",
		"SELECT 1":                  "SELECT 1",
		"WHERE ns = ? AND path = ?": "WHERE ns = $1 AND path = $2",
		"VALUES (?, ?, ?, ?, ?)":    "VALUES ($1, $2, $3, $4, $5)",
		"?":                         "$1",
	} {
		if got := Numbered(q); got != want {
			t.Errorf("Numbered(%q) = %q; want %q", q, got, want)
		}
	}
	// The file table's own conditions take one argument per placeholder.
	for _, strict := range []bool{false, true} {
		where, args := below("/dir", strict)
		n := 0
		for _, c := range where {
			if c == '?' {
				n++
			}
		}
		if n != len(args) {
			t.Errorf("below(/dir, %v) = %q with %d arguments", strict, where, len(args))
		}
	}
	if where, args := below("/", false); where != "" || args != nil {
		t.Errorf("below(/) = %q, %v; want everything", where, args)
	}
}
