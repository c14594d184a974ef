package perm

import (
	"context"
	"io"
	"iter"
	"path/filepath"
	"strings"

	"github.com/deepagents-go/deepagents/vfs"
)

// Rules match paths as written. On a disk, a symbolic link can lead a path
// the rules allow to a place they deny: a project's docs/env pointing at
// ../.env, under "deny read /.env". LinkRules closes that: it checks the
// rules at every place a path reaches through the links of its mounts.

// LinkRules returns b with rules checked at the places a path reaches
// through symbolic links on the mounts that follow them (Mount.Links), as
// the disk backend follows them: each path a read or write leads to, other
// than the path as written, must be allowed too. The path as written is
// left to Wrap (deepagents.PermissionsMiddleware), which every agent
// applies with its own rules; LinkRules, on the backend every agent
// shares, holds the rules given here for all of them. A path whose links cannot be followed (a loop, a link
// out of the directory) is refused. With no rules it returns b itself.
func LinkRules(b vfs.Backend, rules Rules, mounts []Mount) (vfs.Backend, error) {
	if len(rules) == 0 || b == nil {
		return b, nil
	}
	g, err := NewGuard(nil, mounts)
	if err != nil {
		return nil, err
	}
	return &linkRules{inner: b, rules: rules, g: g}, nil
}

// linkRules is a backend under LinkRules.
type linkRules struct {
	inner vfs.Backend
	rules Rules
	g     *Guard
}

// Unwrap returns the backend the rules apply to.
func (b *linkRules) Unwrap() vfs.Backend { return b.inner }

// check refuses op on p when a place p leads to through a link is denied.
// follow says whether a link at the end of p is followed (not for a delete,
// which removes the link itself).
func (b *linkRules) check(op Op, opName, p string, follow bool) error {
	cp, err := vfs.Clean(p)
	if err != nil {
		return err
	}
	reached, err := b.g.reaches(cp, follow)
	if err != nil {
		return &vfs.DeniedError{Op: opName, Path: p, Reason: "cannot tell where this path leads: " + err.Error()}
	}
	for _, r := range reached {
		if r == cp {
			continue
		}
		if rule, ok := b.rules.Decide(op, r); ok && !rule.Allow {
			return &vfs.DeniedError{Op: opName, Path: p,
				Reason: "it leads, through a symbolic link, to " + r + ": permission denied by rule \"" + rule.String() + "\""}
		}
	}
	return nil
}

func (b *linkRules) Stat(ctx context.Context, path string) (vfs.Entry, error) {
	if err := b.check(Read, "stat", path, true); err != nil {
		return vfs.Entry{}, err
	}
	return b.inner.Stat(ctx, path)
}

func (b *linkRules) Read(ctx context.Context, path string) (string, error) {
	if err := b.check(Read, "read", path, true); err != nil {
		return "", err
	}
	return b.inner.Read(ctx, path)
}

// Open implements vfs.Opener, streaming when the wrapped backend can.
func (b *linkRules) Open(ctx context.Context, path string) (io.ReadCloser, vfs.Entry, error) {
	if err := b.check(Read, "read", path, true); err != nil {
		return nil, vfs.Entry{}, err
	}
	return vfs.Open(ctx, b.inner, path)
}

func (b *linkRules) List(ctx context.Context, dir string) ([]vfs.Entry, error) {
	if err := b.check(Read, "list", dir, true); err != nil {
		return nil, err
	}
	return b.inner.List(ctx, dir)
}

func (b *linkRules) Walk(ctx context.Context, dir string) iter.Seq2[vfs.Entry, error] {
	if err := b.check(Read, "search", dir, true); err != nil {
		return func(yield func(vfs.Entry, error) bool) { yield(vfs.Entry{}, err) }
	}
	return b.inner.Walk(ctx, dir)
}

func (b *linkRules) Write(ctx context.Context, path, content string) error {
	if err := b.check(Write, "write", path, true); err != nil {
		return err
	}
	return b.inner.Write(ctx, path, content)
}

// Update implements vfs.Updater through the wrapped backend.
func (b *linkRules) Update(ctx context.Context, path string, fn vfs.UpdateFunc) error {
	if err := b.check(Write, "edit", path, true); err != nil {
		return err
	}
	return vfs.Update(ctx, b.inner, path, fn)
}

func (b *linkRules) Delete(ctx context.Context, path string) (int, error) {
	if err := b.check(Write, "delete", path, false); err != nil {
		return 0, err
	}
	return b.inner.Delete(ctx, path)
}

// reaches returns the virtual paths the clean path p reaches on its mount:
// p itself, and the path as it reads after each symbolic link is followed
// (see resolve), each mapped back to the mount's virtual paths. A path on a
// mount that does not follow links reaches only itself.
func (g *Guard) reaches(p string, follow bool) ([]string, error) {
	m := g.mountOf(p)
	if m == nil || m.Host == "" || !m.Links {
		return []string{p}, nil
	}
	rel := strings.TrimPrefix(p, m.Prefix)
	hosts, err := resolve(m.Host, rel, follow)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		r, err := filepath.Rel(m.Host, h)
		if err != nil || !filepath.IsLocal(r) {
			continue
		}
		v := m.Prefix
		if r != "." {
			v = strings.TrimSuffix(m.Prefix, "/") + "/" + filepath.ToSlash(r)
		}
		out = append(out, v)
	}
	return out, nil
}
