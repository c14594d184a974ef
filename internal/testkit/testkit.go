// Package testkit holds the helpers the project's tests share across
// packages: fake time for the agent loop, and a tool that measures how many
// of its calls run at once.
package testkit

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deepagents-go/deepagents/tool"
)

// Bubble runs f in a testing/synctest bubble, where time is fake: it moves
// only when every goroutine of the bubble is blocked, so sleeps, delays and
// timeouts are exact and instant. At the end it lets fake time pass so that
// the agents' idle tool-call workers, which wait a while for more work, end
// inside the bubble as synctest requires.
func Bubble(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Hour)
		f(t)
	})
}

// Holder is a tool, named "hold", whose every call sleeps one second of
// (fake) time and records how many calls were inside it at once. In a
// Bubble every call a parallelism bound lets in is inside the tool before
// the clock moves, so Peak is exactly the bound.
type Holder struct {
	Tool     tool.Tool
	inFlight atomic.Int32
	peak     atomic.Int32
}

// NewHolder returns a Holder with a fresh count.
func NewHolder() *Holder {
	h := &Holder{}
	h.Tool = tool.MustFunc("hold", "Hold.", func(context.Context, *tool.Env, struct{}) (string, error) {
		n := h.inFlight.Add(1)
		defer h.inFlight.Add(-1)
		for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
		}
		time.Sleep(time.Second)
		return "held", nil
	})
	return h
}

// Peak is the most calls that were inside the tool at once.
func (h *Holder) Peak() int { return int(h.peak.Load()) }
