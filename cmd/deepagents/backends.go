package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/user"
	"regexp"
	"slices"

	"github.com/deepagents-go/deepagents/checkpoint/postgres"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
	"github.com/deepagents-go/deepagents/vfs/store"
)

// MemoriesPrefix is where the CLI mounts the store: files the agent keeps
// across threads.
const MemoriesPrefix = "/memories/"

// backendFlags are run's and resume's flags about where files live and
// what the agent may do with them.
type backendFlags struct {
	noStore   bool
	namespace string
	rules     []string
}

func addBackendFlags(fs *flag.FlagSet, b *backendFlags) {
	fs.BoolVar(&b.noStore, "no-store", false, "do not mount "+MemoriesPrefix+": without it, files under "+MemoriesPrefix+" are kept in the thread database and shared by every thread")
	fs.StringVar(&b.namespace, "store-namespace", "", "whose "+MemoriesPrefix+" to mount: letters, digits, '.', '_', '-', '@' (default: your user name)")
	fs.Func("permission", `a rule on the file tools, such as "deny write /etc/**" (allow|deny, read|write|all, a glob); repeatable, checked in order before [permissions] of the config`, func(s string) error {
		if _, err := perm.Parse(s); err != nil {
			return err
		}
		b.rules = append(b.rules, s)
		return nil
	})
}

var namespaceRe = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,128}$`)

// defaultNamespace is the user's login name, so people sharing a
// PostgreSQL database keep their memories apart.
func defaultNamespace() string {
	if u, err := user.Current(); err == nil && namespaceRe.MatchString(u.Username) {
		return u.Username
	}
	return "default"
}

// wireBackends mounts the store at /memories/ over files (nil: the run's
// own in-state files; else the --root directory) and gathers the
// permission rules: the flags' (flagRules) first, then the config's.
func wireBackends(ctx context.Context, s *setup, b backendFlags, flagRules perm.Rules, cfg *config.Config, files vfs.Backend) (vfs.Backend, perm.Rules, error) {
	rules := append(slices.Clip(flagRules), cfg.Permissions...)
	if b.noStore {
		return files, rules, nil
	}
	ns := b.namespace
	if ns == "" {
		ns = defaultNamespace()
	} else if !namespaceRe.MatchString(ns) {
		return nil, nil, fmt.Errorf("--store-namespace %q: use 1 to 128 letters, digits, '.', '_', '-' or '@'", ns)
	}
	table, closeTable, err := openFileTable(ctx, s.db)
	if err != nil {
		return nil, nil, err
	}
	s.closers = append(s.closers, closeTable)
	st, err := store.New(table, ns)
	if err != nil {
		return nil, nil, err
	}
	c, err := vfs.NewComposite(files, vfs.Route{Prefix: MemoriesPrefix, Backend: st})
	if err != nil {
		return nil, nil, err
	}
	if files != nil {
		// A real directory writes through, as without the store: no
		// layers holding its changes until the step ends.
		return c.Unlayered(), rules, nil
	}
	return c, rules, nil
}

// openFileTable opens the file store's table in the thread database.
func openFileTable(ctx context.Context, d config.Database) (store.Table, func() error, error) {
	switch d.Kind {
	case config.SQLite:
		// The settings the thread saver of the same file runs with.
		t, err := sqlite.OpenFilesWith(d.Path, sqlite.DBOptions{BusyTimeout: dbBusyTimeout, Synchronous: d.Synchronous})
		if err != nil {
			return nil, nil, fmt.Errorf("file store in %s: %w", d, err)
		}
		return t, t.Close, nil
	case config.Postgres:
		cctx, cancel := context.WithTimeout(ctx, dbConnectTimeout+dbCallTimeout)
		defer cancel()
		t, err := postgres.OpenFiles(cctx, d.DSN, postgres.Options{ConnectTimeout: dbConnectTimeout, CallTimeout: dbCallTimeout})
		if err != nil {
			return nil, nil, fmt.Errorf("file store in %s: %w", d, err)
		}
		return t, t.Close, nil
	}
	return nil, nil, errors.New("file store: the thread database has an unknown kind")
}
