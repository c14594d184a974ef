package osfs

import (
	"context"
	"io"
	"io/fs"
	"math"
	"os"

	"github.com/deepagents-go/deepagents/vfs"
)

var _ vfs.Opener = (*FS)(nil)

// Open implements vfs.Opener: it returns the open file, to be read in pieces
// and closed by the caller, so even a file larger than MaxFileBytes can be
// read a page at a time. Like Read, it refuses directories, FIFOs, sockets
// and devices without opening them, and paths that lead outside the
// workspace.
func (f *FS) Open(ctx context.Context, path string) (io.ReadCloser, vfs.Entry, error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return nil, vfs.Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, vfs.Entry{}, err
	}
	if hidden(p) {
		return nil, vfs.Entry{}, &fs.PathError{Op: "open", Path: p, Err: vfs.ErrNotFound}
	}
	r := rel(p)
	// Look before opening: opening a FIFO or a device can block or act.
	fi, err := f.root.Stat(r)
	if err == nil {
		err = readable(fi, math.MaxInt64)
	}
	if err != nil {
		return nil, vfs.Entry{}, f.fail("open", p, err, false)
	}
	file, err := f.root.OpenFile(r, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, vfs.Entry{}, f.fail("open", p, err, false)
	}
	// What was opened is what counts.
	fi, err = file.Stat()
	if err == nil {
		err = readable(fi, math.MaxInt64)
	}
	if err != nil {
		file.Close()
		return nil, vfs.Entry{}, f.fail("open", p, err, false)
	}
	return file, fileEntry(p, fi), nil
}
