package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Database says where the CLI keeps its threads (key db, flag --db):
// "sqlite:PATH" for an SQLite file (optionally followed by
// "?synchronous=full"), or a "postgres://" (or "postgresql://") URL for a
// PostgreSQL server.
type Database struct {
	// Kind is "sqlite" or "postgres".
	Kind string
	// Path is the SQLite file.
	Path string
	// Synchronous is the SQLite file's synchronous setting: "" or "NORMAL"
	// (a commit survives the process being killed; a power cut may lose
	// the last ones) or "FULL" (every commit is synced to disk).
	Synchronous string
	// DSN is the PostgreSQL connection URL.
	DSN string
}

// Kinds of Database.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// DefaultDatabaseFile is where the threads are kept by default, under the
// project directory, or under the home directory outside a project.
const DefaultDatabaseFile = ".deepagents/state.db"

// ParseDatabase reads a database setting. A relative SQLite path is
// relative to dir (the current directory when dir is empty). Its errors say
// what is accepted.
func ParseDatabase(spec, dir string) (Database, error) {
	s := strings.TrimSpace(spec)
	if s == "" {
		return Database{}, errors.New(`no database given; write "sqlite:PATH" or "postgres://USER@HOST/DB"`)
	}
	if !utf8.ValidString(s) || strings.ContainsAny(s, "\x00\r\n") {
		return Database{}, errors.New("the database setting must be one line of text")
	}
	low := strings.ToLower(s)
	switch {
	case strings.HasPrefix(low, "sqlite:"):
		p := s[len("sqlite:"):]
		p, params, hasParams := strings.Cut(p, "?")
		sync := ""
		if hasParams {
			var err error
			if sync, err = sqliteParams(s, params); err != nil {
				return Database{}, err
			}
		}
		if strings.HasPrefix(p, "//") {
			return Database{}, fmt.Errorf(`%q: write an SQLite database as "sqlite:PATH" (for example sqlite:%s), without "//"`, s, DefaultDatabaseFile)
		}
		if p == "" {
			return Database{}, fmt.Errorf(`%q names no file: write "sqlite:PATH"`, s)
		}
		if p == "~" || strings.HasPrefix(p, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				return Database{}, fmt.Errorf("%q: no home directory to put it in: %v", s, err)
			}
			p = filepath.Join(home, p[1:])
		}
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		return Database{Kind: SQLite, Path: p, Synchronous: sync}, nil
	case strings.HasPrefix(low, "postgres://"), strings.HasPrefix(low, "postgresql://"):
		if _, err := url.Parse(s); err != nil {
			return Database{}, fmt.Errorf("%s is not a valid PostgreSQL URL: %v", Redact(s), urlErrText(err))
		}
		return Database{Kind: Postgres, DSN: s}, nil
	case strings.HasPrefix(low, "postgres:"), strings.HasPrefix(low, "postgresql:"):
		return Database{}, fmt.Errorf(`%s: write a PostgreSQL database as a URL, "postgres://USER@HOST:PORT/DB"`, Redact(s))
	}
	hint := ""
	if strings.HasSuffix(low, ".db") || strings.HasSuffix(low, ".sqlite") || strings.ContainsRune(s, filepath.Separator) {
		hint = fmt.Sprintf(` (for this file: "sqlite:%s")`, s)
	}
	return Database{}, fmt.Errorf(`%q is not a database: write "sqlite:PATH" or "postgres://USER@HOST/DB"%s`, clipText(s, 60), hint)
}

// sqliteParams reads the parameters after the "?" of an SQLite database
// setting spec: only synchronous, normal or full. It returns the setting
// in SQLite's spelling ("NORMAL" or "FULL").
func sqliteParams(spec, params string) (string, error) {
	const accepted = `an SQLite database takes one parameter, synchronous=normal (the default) or synchronous=full; a "?" starts the parameters, so a file name cannot have one`
	sync := ""
	for _, kv := range strings.Split(params, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if k != "synchronous" {
			return "", fmt.Errorf("%q: unknown parameter %q: %s", clipText(spec, 80), clipText(k, 40), accepted)
		}
		if sync != "" {
			return "", fmt.Errorf("%q: synchronous is given twice: %s", clipText(spec, 80), accepted)
		}
		switch strings.ToLower(v) {
		case "normal":
			sync = "NORMAL"
		case "full":
			sync = "FULL"
		default:
			return "", fmt.Errorf("%q: synchronous=%s is not accepted: %s", clipText(spec, 80), clipText(v, 40), accepted)
		}
	}
	return sync, nil
}

// String names the database for people, without a password. It reads
// back as the same setting.
func (d Database) String() string {
	if d.Kind == Postgres {
		return Redact(d.DSN)
	}
	if d.Synchronous != "" {
		return "sqlite:" + d.Path + "?synchronous=" + strings.ToLower(d.Synchronous)
	}
	return "sqlite:" + d.Path
}

// Redact hides the passwords of a database URL (in its user part and in
// password or sslpassword parameters), so it can be shown.
func Redact(dsn string) string {
	out, _, err := hideSecrets(dsn, false)
	if err != nil {
		return "the database URL"
	}
	return out
}

// WithoutPassword returns a database URL with its passwords left out (the
// user part's and password or sslpassword parameters), for a command line
// to print that still works with the password given another way, and
// whether there was one. A URL that does not parse is an error.
func WithoutPassword(dsn string) (string, bool, error) {
	return hideSecrets(dsn, true)
}

// hideSecrets replaces the passwords of dsn with xxxxx, or leaves them out
// when drop is set. Parameters keep their order; a URL with no secret comes
// back exactly as given.
func hideSecrets(dsn string, drop bool) (string, bool, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", false, err
	}
	changed := false
	if u.User != nil {
		if _, has := u.User.Password(); has {
			if drop {
				u.User = url.User(u.User.Username())
			} else {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			}
			changed = true
		}
	}
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		kept := params[:0]
		for _, p := range params {
			key, _, _ := strings.Cut(p, "=")
			if k, err := url.QueryUnescape(key); err == nil && secretParams[k] {
				changed = true
				if drop {
					continue
				}
				p = key + "=xxxxx"
			}
			kept = append(kept, p)
		}
		u.RawQuery = strings.Join(kept, "&")
	}
	if !changed {
		return dsn, false, nil
	}
	return u.String(), true, nil
}

// secretParams are the connection-string parameters whose values are
// secrets (libpq's names).
var secretParams = map[string]bool{"password": true, "sslpassword": true}

func urlErrText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}
