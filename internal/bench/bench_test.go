package bench

import (
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
)

func TestStepsNeeded(t *testing.T) {
	cases := []struct {
		o    Options
		want int
	}{
		{Options{}, 51},                      // the reference setup: K=50
		{Options{K: 1000}, 1001},             // the sequential phase's K rounds and its answer
		{Options{K: 2, SubRounds: 400}, 401}, // a child's rounds
		{Options{K: 1, SubRounds: 1}, 7},     // the warm-up (6 rounds) still fits
	}
	for _, c := range cases {
		if got := StepsNeeded(c.o); got != c.want {
			t.Errorf("StepsNeeded(%+v) = %d, want %d", c.o, got, c.want)
		}
	}
}

// A sequential phase longer than the default step limit runs in full.
func TestRunIsNotCappedByTheDefaultStepLimit(t *testing.T) {
	k := agent.DefaultMaxSteps + 20
	rep, err := Run(t.Context(), Options{K: k, Fanouts: []int{2}, SubRounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Phases["sequential"]; p.ModelCalls != k+1 || p.Cut != "" || p.Files != (k+1)/2 {
		t.Errorf("sequential: %d calls (want %d), %d files, cut %q", p.ModelCalls, k+1, p.Files, p.Cut)
	}
	if p := rep.Phases["fanout_2"]; p.ModelCalls != 2+2*2 || p.Cut != "" {
		t.Errorf("fanout_2: %+v", p)
	}
	if cut := rep.Cut(); len(cut) != 0 {
		t.Errorf("Cut() = %q", cut)
	}
}

// A phase stopped by a step limit is measured and marked as cut, never
// passed off as complete.
func TestRunPhaseSaysWhenItWasCut(t *testing.T) {
	cases := []struct {
		task                string
		subRounds, maxSteps int
		want                string
	}{
		{"seq 10", 2, 5, "status limit after 5 model calls"},
		{"fan 1", 3, 2, "a child ended with status limit"}, // the parent's 2 calls fit; the child's 3 do not
	}
	for _, c := range cases {
		a, m, err := newAgent(c.subRounds, c.maxSteps)
		if err != nil {
			t.Fatal(err)
		}
		p, err := runPhase(t.Context(), a, m, "phase", c.task, c.subRounds, nil)
		if err != nil {
			t.Fatalf("%s: a cut run is still measured: %v", c.task, err)
		}
		if !strings.Contains(p.Cut, c.want) || p.ModelCalls == 0 {
			t.Errorf("%s: Cut = %q after %d calls, want it to say %q", c.task, p.Cut, p.ModelCalls, c.want)
		}
		rep := &Report{Phases: map[string]Phase{"phase": p}, Order: []string{"phase"}}
		if cut := rep.Cut(); len(cut) != 1 || !strings.HasPrefix(cut[0], "phase: ") {
			t.Errorf("Report.Cut() = %q", cut)
		}
	}
}

func TestMedianKeepsCutAndTakesMiddleValues(t *testing.T) {
	mk := func(wall float64, cut string) *Report {
		return &Report{Order: []string{"sequential"}, BuildMS: wall, Phases: map[string]Phase{"sequential": {Name: "sequential", WallMS: wall, ModelCalls: 3, Cut: cut}}}
	}
	med := Median([]*Report{mk(30, ""), mk(10, "the run ended with status limit"), mk(20, "")})
	p := med.Phases["sequential"]
	if p.WallMS != 20 || med.BuildMS != 20 || p.ModelCalls != 3 {
		t.Errorf("median wall %v build %v calls %d, want 20, 20, 3", p.WallMS, med.BuildMS, p.ModelCalls)
	}
	if p.Cut == "" {
		t.Error("a phase cut in any run must stay marked as cut")
	}
	if Median(nil) != nil {
		t.Error("Median(nil) must be nil")
	}
}
