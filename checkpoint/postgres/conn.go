package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults for Options fields left zero.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultCallTimeout    = 30 * time.Second
	DefaultSnapshotEvery  = 50
)

// Options tunes a Saver. The zero value is ready to use.
type Options struct {
	// Schema holds the saver's tables; it is created when missing. Empty
	// means the connection's default (usually "public"). Names are plain
	// identifiers: a letter or underscore, then letters, digits or
	// underscores, at most 63 bytes.
	Schema string
	// ConnectTimeout bounds opening one connection (DNS, TCP, TLS, login),
	// so a wrong address fails fast instead of hanging. It applies when
	// the connection string has no connect_timeout of its own (nor the
	// PGCONNECT_TIMEOUT variable): a connect_timeout there wins, and 0
	// counts as none.
	ConnectTimeout time.Duration
	// CallTimeout bounds every call of the saver (one query or one
	// transaction) on top of the caller's context. The schema upgrade that
	// Open may make is one long transaction, given up to ten minutes.
	CallTimeout time.Duration
	// MaxConns caps the pool; zero keeps pgxpool's default.
	MaxConns int32
	// SnapshotEvery is how many steps pass between snapshots (records that
	// hold a whole state by reference); rebuilding a state reads one
	// snapshot and at most this many steps after it.
	SnapshotEvery int
	// ServerClock times leases by the database server's clock instead of
	// the now each caller passes to Acquire and Renew: machines that share
	// one database then need no synchronised clocks (a machine whose clock
	// runs a minute ahead would otherwise take over live leases). The
	// callers' times are then ignored, so a deterministic runtime's leases
	// are no longer deterministic.
	ServerClock bool
	// NoCreate leaves a database without the saver's tables as it is:
	// Open creates no schema and no table there and fails with
	// ErrNoTables. Tables of an older version are still upgraded. It is
	// for callers that only read, such as a listing of threads.
	NoCreate bool
}

// ErrNoTables is the error of Open with Options.NoCreate when the database
// has no checkpoint tables yet (in Options.Schema, or on the search path).
var ErrNoTables = errors.New("postgres checkpoint saver: the database has no checkpoint tables yet")

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.SnapshotEvery <= 0 {
		o.SnapshotEvery = DefaultSnapshotEvery
	}
	return o
}

var plainIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// db is the connection side of the saver: the pool, the timeouts and the
// schema migrations.
type db struct {
	pool *pgxpool.Pool
	opts Options
}

// poolConfig checks opts' schema name and parses dsn into a pool's
// configuration with opts' search path and size, and its connect timeout:
// the connection string's connect_timeout when it has one, else
// opts.ConnectTimeout. timeout says which and from where, for messages;
// who names the caller in errors.
func poolConfig(dsn string, opts Options, who string) (cfg *pgxpool.Config, timeout string, err error) {
	if opts.Schema != "" && !plainIdent.MatchString(opts.Schema) {
		return nil, "", fmt.Errorf("%s: schema name %q is not a plain identifier (letters, digits and underscores, not starting with a digit, at most 63 bytes)", who, opts.Schema)
	}
	cfg, err = pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors redact passwords.
		return nil, "", fmt.Errorf("%s: bad connection string: %w", who, err)
	}
	switch {
	case cfg.ConnConfig.ConnectTimeout <= 0:
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
		timeout = fmt.Sprintf("connect timeout %s, the default: the connection string sets no connect_timeout", opts.ConnectTimeout)
	case strings.Contains(dsn, "connect_timeout"):
		timeout = fmt.Sprintf("connect timeout %s, from the connection string's connect_timeout", cfg.ConnConfig.ConnectTimeout)
	case os.Getenv("PGCONNECT_TIMEOUT") != "":
		timeout = fmt.Sprintf("connect timeout %s, from PGCONNECT_TIMEOUT", cfg.ConnConfig.ConnectTimeout)
	default:
		timeout = fmt.Sprintf("connect timeout %s, from the connection settings", cfg.ConnConfig.ConnectTimeout)
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	return cfg, timeout, nil
}

// newPool opens a pool configured by poolConfig. It does not contact the
// server.
func newPool(ctx context.Context, dsn string, opts Options, who string) (*pgxpool.Pool, *pgxpool.Config, error) {
	cfg, _, err := poolConfig(dsn, opts, who)
	if err != nil {
		return nil, nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", who, err)
	}
	return pool, cfg, nil
}

// openDB parses dsn, opens a pool, checks that the server answers and
// brings the schema up to date, all within the connect and call timeouts.
func openDB(ctx context.Context, dsn string, opts Options) (*db, error) {
	opts = opts.withDefaults()
	cfg, timeout, err := poolConfig(dsn, opts, "postgres checkpoint saver")
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres checkpoint saver: %w", err)
	}
	d := &db{pool: pool, opts: opts}
	// Connecting, then one round trip.
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnConfig.ConnectTimeout+opts.CallTimeout)
	err = pool.Ping(pctx)
	cancel()
	if err != nil {
		pool.Close()
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			// The server answered: what it said (no such role or
			// database, a wrong password, too many connections) is the
			// news, not the address.
			return nil, fmt.Errorf("postgres checkpoint saver: the server at %s:%d answered, but with an error: %w",
				cfg.ConnConfig.Host, cfg.ConnConfig.Port, pgErr)
		}
		return nil, fmt.Errorf("postgres checkpoint saver: cannot reach the server at %s:%d (%s): %w",
			cfg.ConnConfig.Host, cfg.ConnConfig.Port, timeout, err)
	}
	if err := d.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return d, nil
}

// call derives the context for one call of the saver: the caller's,
// bounded by CallTimeout.
func (d *db) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d.opts.CallTimeout)
}

// tx runs f in one transaction under the call timeout, committing when f
// returns nil and rolling back otherwise.
func (d *db) tx(ctx context.Context, f func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := d.call(ctx)
	defer cancel()
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error { return f(ctx, tx) })
}

// migrateTimeout bounds the transaction that upgrades a schema: converting
// the rows of an older version is one long job, not one call, so it gets
// this much even when CallTimeout is shorter.
const migrateTimeout = 10 * time.Minute

// migrationLockKey is the advisory lock that serialises migrations of one
// schema across processes (two savers opening a fresh database at once).
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("deepagents checkpoint migrations\x00" + schema))
	return int64(h.Sum64())
}

// migrate brings the schema up to date. It first reads the recorded
// version, which takes no lock and creates nothing, so that a role allowed
// only to read can open a database whose schema is current. Otherwise it
// applies the migrations not yet recorded in deepagents_migrations in one
// transaction, holding an advisory lock so concurrent openers apply each
// exactly once: the version is read again under the lock.
func (d *db) migrate(ctx context.Context) error {
	have, found, err := d.version(ctx)
	if err != nil {
		return err
	}
	if found {
		if err := knownVersion(have); err != nil {
			return err
		}
		if have == len(migrations) {
			return nil
		}
	} else if d.opts.NoCreate {
		return ErrNoTables
	}
	mctx, cancel := context.WithTimeout(ctx, max(d.opts.CallTimeout, migrateTimeout))
	defer cancel()
	var inner error // applyMigrations's error, which says what it was doing
	err = pgx.BeginFunc(mctx, d.pool, func(tx pgx.Tx) error {
		inner = d.applyMigrations(mctx, tx)
		return inner
	})
	if err != nil && inner == nil {
		// Beginning or committing failed (a timeout, a lost connection):
		// the bare driver error would not say what was going on.
		return fmt.Errorf("postgres checkpoint saver: upgrading the schema from version %d to %d: %w", have, len(migrations), err)
	}
	return err
}

// applyMigrations applies, in tx, the migrations not yet recorded.
func (d *db) applyMigrations(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey(d.opts.Schema)); err != nil {
		return fmt.Errorf("postgres checkpoint saver: taking the migration lock: %w", err)
	}
	if d.opts.Schema != "" {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{d.opts.Schema}.Sanitize()); err != nil {
			return fmt.Errorf("postgres checkpoint saver: creating schema %s: %w", d.opts.Schema, err)
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS deepagents_migrations (
		v integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("postgres checkpoint saver: creating the migrations table: %w", err)
	}
	var have int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(v), 0) FROM deepagents_migrations").Scan(&have); err != nil {
		return fmt.Errorf("postgres checkpoint saver: reading the schema version: %w", err)
	}
	if err := knownVersion(have); err != nil {
		return err
	}
	for v := have + 1; v <= len(migrations); v++ {
		if _, err := tx.Exec(ctx, migrations[v-1].sql); err != nil {
			return fmt.Errorf("postgres checkpoint saver: migration %d: %w", v, err)
		}
		if fn := migrations[v-1].fn; fn != nil {
			if err := fn(ctx, tx, d.opts); err != nil {
				return fmt.Errorf("postgres checkpoint saver: migration %d: %w", v, err)
			}
		}
		if _, err := tx.Exec(ctx, "INSERT INTO deepagents_migrations (v) VALUES ($1)", v); err != nil {
			return fmt.Errorf("postgres checkpoint saver: recording migration %d: %w", v, err)
		}
	}
	return nil
}

// version reads the schema version recorded in deepagents_migrations
// without taking a lock or creating anything; found is false when the
// search path holds no such table (or none that the role may see). When
// Options.Schema is empty and no schema of the connection's search path
// exists (or the role may use none), there is nowhere to make the tables:
// the error names the path.
func (d *db) version(ctx context.Context) (have int, found bool, err error) {
	ctx, cancel := d.call(ctx)
	defer cancel()
	var table, current *string
	var path string
	if err := d.pool.QueryRow(ctx, "SELECT to_regclass('deepagents_migrations')::text, current_schema()::text, current_setting('search_path')").Scan(&table, &current, &path); err != nil {
		return 0, false, fmt.Errorf("postgres checkpoint saver: looking for the migrations table: %w", err)
	}
	if table == nil {
		if current == nil && d.opts.Schema == "" {
			return 0, false, fmt.Errorf("postgres checkpoint saver: no schema of the search path (search_path=%s) exists, or none this role may use, so there is nowhere to keep the tables: create the schema first, or name an existing one in search_path", path)
		}
		// No version, but the thread tables of some version are there:
		// the database is not new, and must not be taken for one (no
		// threads listed, tables made again over them).
		var found []string
		if err := d.pool.QueryRow(ctx, `SELECT array_remove(ARRAY[
			to_regclass('cp_records')::text, to_regclass('checkpoints')::text, to_regclass('leases')::text], NULL)`).Scan(&found); err != nil {
			return 0, false, fmt.Errorf("postgres checkpoint saver: looking for the thread tables: %w", err)
		}
		if len(found) > 0 {
			return 0, false, fmt.Errorf("postgres checkpoint saver: the database has thread tables (%s) but no deepagents_migrations table recording their version (search_path=%s): it was changed by something other than deepagents; restore the table or the database from a backup", strings.Join(found, ", "), path)
		}
		return 0, false, nil
	}
	if err := d.pool.QueryRow(ctx, "SELECT coalesce(max(v), 0) FROM deepagents_migrations").Scan(&have); err != nil {
		return 0, true, fmt.Errorf("postgres checkpoint saver: reading the schema version: %w", err)
	}
	if have == len(migrations) {
		// The tables this version reads and writes must all be there: a
		// database missing one is damaged, and would otherwise fail call
		// by call, or list no threads.
		var missing []string
		if err := d.pool.QueryRow(ctx, `SELECT array_agg(t) FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NULL`, currentTables).Scan(&missing); err != nil {
			return 0, true, fmt.Errorf("postgres checkpoint saver: looking for the thread tables: %w", err)
		}
		if len(missing) > 0 {
			return 0, true, fmt.Errorf("postgres checkpoint saver: the database's schema is version %d but lacks its tables %s (search_path=%s): it was changed by something other than deepagents; restore them or the database from a backup", have, strings.Join(missing, ", "), path)
		}
	}
	return have, true, nil
}

// currentTables are the tables the current schema version reads and
// writes.
var currentTables = []string{"cp_records", "cp_chunks", "cp_blobs", "cp_refs", "cp_writes", "leases"}

// knownVersion refuses a schema version newer than this program's.
func knownVersion(have int) error {
	if have > len(migrations) {
		return fmt.Errorf("postgres checkpoint saver: the database's schema is version %d, newer than this program knows (%d); upgrade the program", have, len(migrations))
	}
	return nil
}

// errClosed is returned by calls on a closed saver.
var errClosed = errors.New("postgres checkpoint saver: closed")
