package agent

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// FuzzContextReportJSON: the hand-written encoding of a context report is
// byte for byte encoding/json's, and reads back to the same report.
func FuzzContextReportJSON(f *testing.F) {
	f.Add(10, 20, 30, 40, 5, 6, 100, 200000, 90, 99, 1.0, 0)
	f.Add(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0)
	f.Add(-1, 2, -3, 4, -5, 6, -7, -8, 9, 10, 1.2345678901234567, 77)
	f.Add(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1e-7, 1)
	f.Add(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3e21, 1)
	f.Add(math.MaxInt, math.MinInt, 0, 0, 0, 0, 0, 0, 0, 0, -0.5, math.MinInt)
	f.Fuzz(func(t *testing.T, sys, tools, msgs, results, mem, skills, free, window, est, cal int, ratio float64, last int) {
		c := ContextReport{System: sys, Tools: tools, Messages: msgs, ToolResults: results, Memory: mem, Skills: skills,
			Free: free, Window: window, Estimated: est, Calibrated: cal, Ratio: ratio, LastReported: last}
		got, err := c.MarshalJSON()
		want, werr := c.marshalSlow()
		if (err != nil) != (werr != nil) {
			t.Fatalf("error %v; encoding/json's %v", err, werr)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("wrote %s\nencoding/json writes %s", got, want)
		}
		var back ContextReport
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if window <= 0 {
			c.Free = 0
		}
		if back != c && !(math.IsNaN(ratio)) {
			t.Fatalf("read back %+v, want %+v", back, c)
		}
	})
}
