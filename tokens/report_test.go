package tokens

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
)

// A report's JSON has its fields in a fixed order with free last, free
// only when the window is known (even when nothing is free), and
// last_reported only after a reported call: the bytes of every
// model.request event and saved subagent result.
func TestReportJSON(t *testing.T) {
	for _, tc := range []struct {
		r    Report
		want string
	}{
		{Report{System: 10, Tools: 20, Messages: 30, ToolResults: 40, Memory: 5, Skills: 6, Free: 100, Window: 200000,
			Estimated: 90, Calibrated: 99, Ratio: 1.1, LastReported: 3},
			`{"system":10,"tools":20,"messages":30,"tool_results":40,"memory":5,"skills":6,"window":200000,"estimated":90,"calibrated":99,"ratio":1.1,"last_reported":3,"free":100}`},
		{Report{Free: 0, Window: 50, Calibrated: 50, Ratio: 1},
			`{"system":0,"tools":0,"messages":0,"tool_results":0,"memory":0,"skills":0,"window":50,"estimated":0,"calibrated":50,"ratio":1,"free":0}`},
		{Report{Free: 7, Estimated: 2, Calibrated: 3, Ratio: 1.2345678901234567},
			`{"system":0,"tools":0,"messages":0,"tool_results":0,"memory":0,"skills":0,"estimated":2,"calibrated":3,"ratio":1.2345678901234567}`},
		{Report{Ratio: 1e-7}, `{"system":0,"tools":0,"messages":0,"tool_results":0,"memory":0,"skills":0,"estimated":0,"calibrated":0,"ratio":1e-7}`},
	} {
		got, err := json.Marshal(tc.r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.r, got, tc.want)
		}
	}
	if _, err := json.Marshal(Report{Ratio: math.NaN()}); err == nil {
		t.Error("a NaN ratio encodes")
	}
}

// FuzzReportJSON: a report reads back from its JSON as it was, but for
// Free, which is not written without a window.
func FuzzReportJSON(f *testing.F) {
	f.Add(10, 20, 30, 40, 5, 6, 100, 200000, 90, 99, 1.0, 0)
	f.Add(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0)
	f.Add(-1, 2, -3, 4, -5, 6, -7, -8, 9, 10, 1.2345678901234567, 77)
	f.Add(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1e-7, 1)
	f.Add(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3e21, 1)
	f.Add(math.MaxInt, math.MinInt, 0, 0, 0, 0, 0, 0, 0, 0, -0.5, math.MinInt)
	f.Fuzz(func(t *testing.T, sys, tools, msgs, results, mem, skills, free, window, est, cal int, ratio float64, last int) {
		c := Report{System: sys, Tools: tools, Messages: msgs, ToolResults: results, Memory: mem, Skills: skills,
			Free: free, Window: window, Estimated: est, Calibrated: cal, Ratio: ratio, LastReported: last}
		b, err := json.Marshal(c)
		if err != nil {
			if !math.IsNaN(ratio) && !math.IsInf(ratio, 0) {
				t.Fatal(err)
			}
			return
		}
		var back Report
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if window <= 0 {
			c.Free = 0
		}
		if back != c {
			t.Fatalf("read back %+v, want %+v", back, c)
		}
	})
}

// The parts of a report add up to Calibrated, and with Free to the window;
// tagged memory and skills come out of the system prompt, other tags stay
// in it.
func TestNewReportAddsUp(t *testing.T) {
	b := Breakdown{System: 101, Tools: 33, Messages: 57, ToolResults: 13, Total: 204}
	r := NewReport(b, map[string]int{MemoryPart: 20, SkillsPart: 11, "other": 9}, 1.37, 1000)
	if r.Memory != 27 || r.Skills != 15 || r.System != 96 {
		t.Errorf("parts %+v", r)
	}
	if sum := r.System + r.Tools + r.Messages + r.ToolResults + r.Memory + r.Skills; sum != r.Calibrated || r.Calibrated+r.Free != 1000 {
		t.Errorf("parts add to %d, calibrated %d, free %d", sum, r.Calibrated, r.Free)
	}
	// Claims larger than the system prompt are held to it.
	r = NewReport(Breakdown{System: 10, Total: 10}, map[string]int{MemoryPart: 8, SkillsPart: 8}, 1, 0)
	if r.Memory != 8 || r.Skills != 2 || r.System != 0 || r.Free != 0 {
		t.Errorf("held parts %+v", r)
	}
}

// Merging ledgers sums calls, tokens and summariser usage and keeps the
// larger peak; LedgerTree puts a run's own ledger first, so Last is its own.
func TestLedgerMergeAndTree(t *testing.T) {
	var own, kid Ledger
	own.Add(Report{Calibrated: 10})
	own.Add(Report{Calibrated: 30})
	own.Add(Report{Calibrated: 20})
	kid.Add(Report{Calibrated: 50})
	kid.SummarizerCalls, kid.Summarizer = 1, llm.Usage{InputTokens: 9}
	if own.Calls != 3 || own.Sent != 60 || own.Last.Calibrated != 20 || own.Peak.Calibrated != 30 {
		t.Fatalf("own %+v", own)
	}
	total := LedgerTree("p", map[string]Ledger{"p": own, "p/k": kid})
	if total.Calls != 4 || total.Sent != 110 || total.Last.Calibrated != 20 || total.Peak.Calibrated != 50 ||
		total.SummarizerCalls != 1 || total.Summarizer.InputTokens != 9 {
		t.Errorf("tree %+v", total)
	}
	if got := (Ledger{}).Merge(kid); got.Last != kid.Last || got.Peak != kid.Peak || got.Calls != 1 {
		t.Errorf("merge into empty %+v", got)
	}
}
