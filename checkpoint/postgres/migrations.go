package postgres

// migrations are the schema's versions in order: migrations[i] takes the
// schema from version i to i+1. Never edit a released entry; append.
//
// The data model: a checkpoint row per step with its own delta (values set,
// usage, the running total); the step's appended messages and file changes
// in their own tables; file contents once per SHA-256 in blobs, shared by
// every thread; every SnapshotEvery steps a checkpoint also records its full
// state: its values, its files by hash, and its history by reference (the
// previous snapshot, snap_base, plus the ids after it), so a snapshot's size
// does not grow with the thread and a state is rebuilt from one snapshot, its
// chain of earlier snapshots' id lists and at most SnapshotEvery deltas. Times
// are RFC 3339 text with nanoseconds, so they come back exactly.
var migrations = []string{
	// 1: the first schema.
	`CREATE TABLE checkpoints (
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
	)`,
	// 2: the snapshots of a namespace, read together to expand a history.
	`CREATE INDEX checkpoints_snapshots ON checkpoints (thread_id, ns) WHERE snapshot IS NOT NULL`,
}
