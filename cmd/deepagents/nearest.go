package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/runner"
)

// A mistyped --thread must not silently start a new conversation: 'run'
// refuses an id the database does not know, naming the ids nearest to it,
// and makes a thread with a chosen id only when --new-thread says so.

// unknownThreadError is 'run --thread ID' or 'resume --thread ID' for an
// id the database has no thread of.
type unknownThreadError struct {
	thread  string
	db      config.Database
	nearest []string
	// canMake says --new-thread would make the thread (run, not resume).
	canMake bool
}

func (e *unknownThreadError) Error() string {
	var b strings.Builder
	if e.canMake {
		fmt.Fprintf(&b, "--thread: there is no thread %q in %s ", e.thread, e.db)
	} else {
		fmt.Fprintf(&b, "thread %q has no run to resume: %s has no such thread ", e.thread, e.db)
	}
	switch len(e.nearest) {
	case 0:
		b.WriteString("(list the threads with 'deepagents threads')")
	case 1:
		fmt.Fprintf(&b, "(did you mean %s?)", e.nearest[0])
	default:
		fmt.Fprintf(&b, "(the nearest ids: %s)", strings.Join(e.nearest, ", "))
	}
	if e.canMake {
		b.WriteString("; to start a new thread with this id, add --new-thread")
	}
	return b.String()
}

// heldByAnother reports whether another run holds thread: one that made it
// moments ago, whose first save the database may not show yet. Such a
// thread exists; the run that goes on to use it is told it is held.
func heldByAnother(ctx context.Context, saver checkpoint.Saver, thread string) bool {
	holder := runner.LeaseHolder()
	_, err := saver.Acquire(ctx, thread, holder, time.Now(), time.Minute)
	if err == nil {
		_ = saver.Release(context.WithoutCancel(ctx), thread, holder)
	}
	var le *checkpoint.LeasedError
	return errors.As(err, &le)
}

// maxListedThreads bounds the threads whose ids are compared with an
// unknown one: the most recently updated.
const maxListedThreads = 10000

// maxNearest is how many ids an unknown thread's error names at most.
const maxNearest = 3

// unknownThread is the error for thread, which the database d (open as
// saver) does not have, with the known ids nearest to it; canMake says
// --new-thread would make it.
func unknownThread(ctx context.Context, saver checkpoint.Saver, thread string, d config.Database, canMake bool) error {
	e := &unknownThreadError{thread: thread, db: d, canMake: canMake}
	ts, err := saver.Threads(ctx, checkpoint.ThreadsOptions{Limit: maxListedThreads})
	if err != nil {
		return e // the ids are a help; the error stands without them
	}
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	e.nearest = nearestIDs(thread, ids, maxNearest)
	for i, id := range e.nearest {
		e.nearest[i] = shellWord(id)
	}
	return e
}

// nearestIDs returns at most n of ids (most recent first) that are near id:
// those it begins (an id typed in part), then those a few edits away (a
// typo), nearest first; ids equally near keep their order.
func nearestIDs(id string, ids []string, n int) []string {
	type near struct {
		id   string
		dist int
	}
	// A typo is up to a quarter of the id's length of edits away: one in
	// a short id.
	limit := max(1, len(id)/4)
	var found []near
	for _, c := range ids {
		switch {
		case c == id:
			continue
		case len(id) >= 4 && strings.HasPrefix(c, id):
			found = append(found, near{c, 0})
		default:
			if d, ok := editDistance(id, c, limit); ok {
				found = append(found, near{c, d})
			}
		}
	}
	slices.SortStableFunc(found, func(a, b near) int { return a.dist - b.dist })
	out := []string{}
	for _, f := range found[:min(n, len(found))] {
		out = append(out, f.id)
	}
	return out
}

// editDistance is the number of single-byte insertions, deletions and
// substitutions between a and b, when it is at most limit (ok false
// otherwise). It works in O(len(a) * limit) time.
func editDistance(a, b string, limit int) (int, bool) {
	if d := len(a) - len(b); d > limit || -d > limit {
		return 0, false
	}
	const far = 1 << 30
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-limit), min(len(b), i+limit)
		for j := range cur {
			cur[j] = far
		}
		if i <= limit {
			cur[0] = i
		}
		best := cur[0]
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j-1]+cost, prev[j]+1, cur[j-1]+1)
			best = min(best, cur[j])
		}
		if best > limit {
			return 0, false
		}
		prev, cur = cur, prev
	}
	if d := prev[len(b)]; d <= limit {
		return d, true
	}
	return 0, false
}
