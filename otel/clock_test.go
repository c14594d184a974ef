package daotel_test

import (
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/agent"
)

// clock is a Sequential runtime whose time moves only when a test moves it,
// so spans and metrics get exact durations.
type clock struct {
	agent.Runtime
	mu  sync.Mutex
	now time.Time
}

func newClock(start time.Time) *clock {
	return &clock{Runtime: agent.Sequential(start), now: start}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
