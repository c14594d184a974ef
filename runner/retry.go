package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/deepagents-go/deepagents/agent"
)

// DefaultSaveRetry is how long a run keeps trying a save that fails because
// the checkpoint store is unavailable (checkpoint.ErrUnavailable: a database
// restarting, a network cut) before the run fails.
const DefaultSaveRetry = 2 * time.Minute

// saveRetryPauses are the pauses between tries of a save the store could
// not take; the last one repeats.
var saveRetryPauses = []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second}

// retrying is a recorder whose records the store could not take for now
// (agent.ErrRecorderUnavailable) are tried again, with growing pauses, for
// up to budget after the first failure (0: DefaultSaveRetry; negative: not
// at all), so that a database restart does not end every run that saves
// meanwhile. Each try is announced by a warning event. Saves are
// idempotent, so a save that had landed before it failed is not doubled.
type retrying struct {
	rec    agent.Recorder
	budget time.Duration
}

func (r retrying) Record(ctx context.Context, rec *agent.StepRecord) error {
	err := r.rec.Record(ctx, rec)
	if err == nil || ctx.Err() != nil || !errors.Is(err, agent.ErrRecorderUnavailable) {
		return err
	}
	budget := r.budget
	if budget == 0 {
		budget = DefaultSaveRetry
	}
	// The pauses are waits on the wall clock, as the lease's renewal is:
	// they decide nothing the run records.
	first := time.Now()
	for i := 0; ; i++ {
		pause := saveRetryPauses[min(i, len(saveRetryPauses)-1)]
		if time.Since(first)+pause > budget {
			return err
		}
		if rec.Warn != nil {
			rec.Warn(fmt.Sprintf("a save failed (%v); trying again in %s (try %d; giving up %s after the first failure)", err, pause, i+2, budget))
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			// Cancelled meanwhile: the recorder makes what was paid for
			// once more without the cancellation.
			return r.rec.Record(ctx, rec)
		case <-t.C:
		}
		if err = r.rec.Record(ctx, rec); err == nil || ctx.Err() != nil || !errors.Is(err, agent.ErrRecorderUnavailable) {
			return err
		}
	}
}
