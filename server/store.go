package server

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by a Store for a thread or run it does not have.
var ErrNotFound = errors.New("not found")

// ThreadRecord is what a Store keeps of a thread; its messages and files
// are in the checkpoint saver.
type ThreadRecord struct {
	ID        string
	CreatedAt time.Time
	UpdatedAt time.Time
	Metadata  map[string]any
	Status    string
	Error     string
}

// RunRecord is what a Store keeps of a run.
type RunRecord struct {
	Run
	// Seq orders the runs of a thread by creation.
	Seq int64
}

// StoredEvent is one server-sent event of a run, numbered from 1 in the
// order it was sent.
type StoredEvent struct {
	Seq   int64
	Event string
	Data  []byte
}

// ThreadQuery filters and pages SearchThreads.
type ThreadQuery struct {
	Metadata  map[string]any
	Status    string
	Limit     int
	Offset    int
	SortBy    string // created_at, updated_at or thread_id
	SortOrder string // asc or desc
}

// Store keeps the server's own records. MemoryStore keeps them in memory;
// OpenSQLStore keeps them in SQLite or Postgres, next to the checkpoints, so
// that runs' events survive a restart.
type Store interface {
	// CreateThread adds a thread; it fails with ErrExists for a taken id.
	CreateThread(ctx context.Context, t ThreadRecord) error
	GetThread(ctx context.Context, id string) (ThreadRecord, error)
	// UpdateThread replaces a thread's record.
	UpdateThread(ctx context.Context, t ThreadRecord) error
	// DeleteThread removes a thread, its runs and their events.
	DeleteThread(ctx context.Context, id string) error
	// SearchThreads returns one page of matching threads and how many match.
	SearchThreads(ctx context.Context, q ThreadQuery) ([]ThreadRecord, int, error)

	PutRun(ctx context.Context, r RunRecord) error
	GetRun(ctx context.Context, threadID, runID string) (RunRecord, error)
	// ListRuns returns a thread's runs, newest first.
	ListRuns(ctx context.Context, threadID string, limit, offset int) ([]RunRecord, error)

	// AppendEvents stores events of a run; their Seq are consecutive.
	AppendEvents(ctx context.Context, runID string, evs []StoredEvent) error
	// Events returns a run's events with Seq > after, in order.
	Events(ctx context.Context, runID string, after int64) ([]StoredEvent, error)
	Close() error
}

// EventPager is what a Store may add so that a stream of a finished run
// reads its events a page at a time instead of all at once: up to limit
// events with Seq > after, in order. Both stores of this package have it.
type EventPager interface {
	EventsPage(ctx context.Context, runID string, after int64, limit int) ([]StoredEvent, error)
}

// ErrExists is returned by CreateThread for a thread id already taken.
var ErrExists = errors.New("already exists")
