package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&amp;</a>", "\x00\x1f\t\n\r\b\f\\", "\u2028\u2029é", "\xff\xfe bad", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := String(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("String(%q) = %s, json.Marshal writes %s", s, got, want)
		}
	})
}

func FuzzFloat(f *testing.F) {
	for _, v := range []float64{0, 1, -1.5, 0.001, 1e-6, 9.99e-7, 1e20, 1e21, 123456.789, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		want, err := json.Marshal(v)
		got, ok := Float(nil, v)
		if !ok {
			if len(got) != 0 {
				t.Fatalf("Float(%v) refused but wrote %s", v, got)
			}
			if err == nil && !bytes.ContainsAny(want, "e") {
				t.Fatalf("Float(%v) refused a value json.Marshal writes plainly (%s)", v, want)
			}
			return
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Float(%v) = %s, json.Marshal writes %s (%v)", v, got, want, err)
		}
	})
}
