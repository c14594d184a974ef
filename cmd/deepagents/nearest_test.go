package main

import (
	"slices"
	"testing"
)

func TestNearestIDs(t *testing.T) {
	ids := []string{"20261203-091500-3f2a9c1e", "20261203-091501-aaaaaaaa", "abc", "abd", "abcdef", "xyz"}
	for _, tt := range []struct {
		id   string
		want []string
	}{
		{"20261203-091500-3f2a9c1f", []string{"20261203-091500-3f2a9c1e"}},
		{"20261203-0915", []string{"20261203-091500-3f2a9c1e", "20261203-091501-aaaaaaaa"}},
		{"abx", []string{"abc", "abd"}},
		{"abc", []string{"abd"}},
		{"q", []string{}},
		{"abcdefgh", []string{"abcdef"}},
	} {
		if got := nearestIDs(tt.id, ids, 3); !slices.Equal(got, tt.want) {
			t.Errorf("nearestIDs(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
	for _, tt := range []struct {
		a, b  string
		limit int
		d     int
		ok    bool
	}{
		{"kitten", "sitting", 3, 3, true},
		{"kitten", "sitting", 2, 0, false},
		{"", "ab", 2, 2, true},
		{"abc", "abc", 0, 0, true},
		{"flaw", "lawn", 2, 2, true},
	} {
		if d, ok := editDistance(tt.a, tt.b, tt.limit); d != tt.d || ok != tt.ok {
			t.Errorf("editDistance(%q, %q, %d) = %d %v, want %d %v", tt.a, tt.b, tt.limit, d, ok, tt.d, tt.ok)
		}
	}
}

// FuzzEditDistance: the banded distance agrees with the full table,
// within the limit, and says so when it is beyond.
func FuzzEditDistance(f *testing.F) {
	f.Add("kitten", "sitting", 3)
	f.Add("20261203-091500-3f2a9c1e", "20261203-091500-3f2a9c1f", 6)
	f.Add("", "abc", 1)
	f.Add("abc", "", 5)
	f.Fuzz(func(t *testing.T, a, b string, limit int) {
		if len(a) > 300 || len(b) > 300 || limit < 0 || limit > 300 {
			return
		}
		want := fullDistance(a, b)
		d, ok := editDistance(a, b, limit)
		if ok != (want <= limit) || ok && d != want {
			t.Fatalf("editDistance(%q, %q, %d) = %d %v; the distance is %d", a, b, limit, d, ok, want)
		}
	})
}

// fullDistance is the edit distance by the whole table.
func fullDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j-1]+cost, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(b)]
}
