package subagent_test

import (
	"testing"
	"testing/synctest"
	"time"
)

// bubble runs f in a testing/synctest bubble, where time is fake: it moves
// only when every goroutine of the bubble is blocked, so sleeps, delays and
// timeouts are exact and instant. At the end it lets fake time pass so that
// the agents' idle tool-call workers, which wait a while for more work, end
// inside the bubble as synctest requires.
func bubble(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Hour)
		f(t)
	})
}
