package vfs

import (
	"context"
	"io"
	"strings"
)

// Opener is a Backend that can hand out a file's content as a stream, so a
// caller that needs only part of a large file (one page of lines, the first
// bytes to tell text from binary) never loads it whole. A backend that holds
// its files in memory need not implement it: Open falls back to Read.
type Opener interface {
	Backend
	// Open returns a reader of the file at path, which the caller closes,
	// and the file's entry. Its errors are those of Read; it has no size
	// limit of its own.
	Open(ctx context.Context, path string) (io.ReadCloser, Entry, error)
}

// Open opens the file at path on b for reading. It streams from disk when
// the backend can (b is an Opener, or a Tracked wrapper of one, or a Layer
// whose path is unchanged over one) and reads the content from memory
// otherwise. A reader from memory also has a Content method returning the
// whole text without a copy.
func Open(ctx context.Context, b Backend, path string) (io.ReadCloser, Entry, error) {
	for inner := b; inner != nil; {
		switch x := inner.(type) {
		case Opener:
			return x.Open(ctx, path)
		case *Tracked:
			inner = x.Backend
		case *Layer:
			inner, _ = x.unchangedBase(path)
		default:
			inner = nil
		}
	}
	// No stream below: read through b itself, so its wrappers' own rules
	// (a layer's deletions, say) hold.
	p, err := Clean(path)
	if err != nil {
		return nil, Entry{}, err
	}
	s, err := b.Read(ctx, p)
	if err != nil {
		return nil, Entry{}, err
	}
	return &memFile{Reader: strings.NewReader(s), s: s}, Entry{Path: p, Size: int64(len(s))}, nil
}

// memFile is Open's reader of content already in memory.
type memFile struct {
	*strings.Reader
	s string
}

func (*memFile) Close() error { return nil }

// Content returns the whole file.
func (m *memFile) Content() string { return m.s }

// unchangedBase returns the layer's base when the layer has neither written
// nor deleted path, so reading it means reading the base.
func (l *Layer) unchangedBase(path string) (Backend, bool) {
	p, err := Clean(path)
	if err != nil {
		return nil, false
	}
	l.mu.RLock()
	_, changed := l.changes[p]
	l.mu.RUnlock()
	if changed {
		return nil, false
	}
	return l.base, true
}
