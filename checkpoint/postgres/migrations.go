package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// A migration takes the schema one version up in one transaction: its
// SQL, then its Go step (given the saver's options).
type migration struct {
	sql string
	fn  func(ctx context.Context, tx pgx.Tx, opts Options) error
}

// migrations are the schema's versions in order: migrations[i] takes the
// schema from version i to i+1. Never edit a released entry; append.
//
// Versions 1 and 2 had a model of their own (a row per checkpoint with its
// delta in columns, messages one row each, snapshots as lists of ids);
// version 3 moves to the shared record format of package checkpoint (see
// engine.go) and converts what the old tables hold.
var migrations = []migration{
	// 1: the first schema.
	{sql: `CREATE TABLE checkpoints (
		seq bigserial PRIMARY KEY,
		thread_id text NOT NULL,
		ns text NOT NULL,
		id text NOT NULL,
		parent_id text NOT NULL DEFAULT '',
		step integer NOT NULL,
		depth integer NOT NULL,
		metadata jsonb NOT NULL DEFAULT '{}',
		status text NOT NULL DEFAULT '',
		at text NOT NULL DEFAULT '',
		step_usage bytea NOT NULL,
		usage bytea NOT NULL,
		title text NOT NULL DEFAULT '',
		vals bytea,
		snapshot bytea,
		snap_base text NOT NULL DEFAULT '',
		UNIQUE (thread_id, ns, id)
	);
	CREATE INDEX checkpoints_by_ns ON checkpoints (thread_id, ns, seq);
	CREATE INDEX checkpoints_by_id ON checkpoints (thread_id, id, seq);
	CREATE TABLE messages (
		thread_id text NOT NULL,
		ns text NOT NULL,
		checkpoint_id text NOT NULL,
		idx integer NOT NULL,
		body bytea NOT NULL,
		PRIMARY KEY (thread_id, ns, checkpoint_id, idx)
	);
	CREATE TABLE file_changes (
		thread_id text NOT NULL,
		ns text NOT NULL,
		checkpoint_id text NOT NULL,
		idx integer NOT NULL,
		path text NOT NULL,
		sha bytea,
		created_at text NOT NULL DEFAULT '',
		modified_at text NOT NULL DEFAULT '',
		PRIMARY KEY (thread_id, ns, checkpoint_id, idx)
	);
	CREATE INDEX file_changes_sha ON file_changes (sha);
	CREATE TABLE snapshot_files (
		thread_id text NOT NULL,
		ns text NOT NULL,
		checkpoint_id text NOT NULL,
		path text NOT NULL,
		sha bytea NOT NULL,
		created_at text NOT NULL DEFAULT '',
		modified_at text NOT NULL DEFAULT '',
		PRIMARY KEY (thread_id, ns, checkpoint_id, path)
	);
	CREATE INDEX snapshot_files_sha ON snapshot_files (sha);
	CREATE TABLE blobs (
		sha bytea PRIMARY KEY,
		content bytea NOT NULL
	);
	CREATE TABLE writes (
		thread_id text NOT NULL,
		ns text NOT NULL,
		checkpoint_id text NOT NULL,
		call_id text NOT NULL,
		kind text NOT NULL,
		body bytea NOT NULL,
		PRIMARY KEY (thread_id, ns, checkpoint_id, call_id, kind)
	);
	CREATE TABLE leases (
		thread_id text PRIMARY KEY,
		holder text NOT NULL,
		expires_ns bigint NOT NULL
	)`},
	// 2: the snapshots of a namespace, read together to expand a history.
	{sql: `CREATE INDEX checkpoints_snapshots ON checkpoints (thread_id, ns) WHERE snapshot IS NOT NULL`},
	// 3: the shared record format.
	{sql: `CREATE TABLE cp_records (
		seq bigserial PRIMARY KEY,
		thread_id text NOT NULL,
		ns text NOT NULL,
		id text NOT NULL,
		title text NOT NULL DEFAULT '',
		record bytea NOT NULL,
		UNIQUE (thread_id, ns, id)
	);
	CREATE INDEX cp_records_by_thread ON cp_records (thread_id, seq);
	CREATE INDEX cp_records_by_ns ON cp_records (thread_id, ns, seq);
	CREATE TABLE cp_chunks (
		thread_id text NOT NULL,
		ns text NOT NULL,
		seq_from bigint NOT NULL,
		seq_to bigint NOT NULL,
		packed boolean NOT NULL DEFAULT false,
		data bytea NOT NULL,
		PRIMARY KEY (thread_id, ns, seq_from)
	);
	CREATE TABLE cp_blobs (
		hash text PRIMARY KEY,
		data bytea NOT NULL
	);
	CREATE TABLE cp_refs (
		thread_id text NOT NULL,
		ns text NOT NULL,
		cp text NOT NULL,
		hash text NOT NULL,
		PRIMARY KEY (thread_id, ns, cp, hash)
	);
	CREATE INDEX cp_refs_by_hash ON cp_refs (hash);
	CREATE TABLE cp_writes (
		thread_id text NOT NULL,
		ns text NOT NULL,
		cp text NOT NULL,
		call_id text NOT NULL,
		kind text NOT NULL,
		data bytea NOT NULL,
		PRIMARY KEY (thread_id, ns, cp, call_id, kind)
	)`, fn: convertV2},
}
