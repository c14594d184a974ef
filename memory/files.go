package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/vfs"
)

// files is a vfs.Backend of a few named files on disk, the memory files
// of one directory as the agent sees it: /NAME is the disk file files[NAME].
// Only those names can be read and written, each only where its source
// allows (Source.Within); nothing can be deleted.
type files struct {
	names  map[string]string // name → disk path
	places map[string]place  // name → where it may be read and written
	mu     sync.Mutex        // serialises writes and updates
}

var _ vfs.Updater = (*files)(nil)

// place is where the memory file name may be read and written.
func (f *files) place(name string) place {
	if pl, ok := f.places[name]; ok {
		return pl
	}
	return newPlace(Source{Path: f.names[name]})
}

func (f *files) lookup(path string) (name, disk string, err error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return "", "", err
	}
	if p == "/" {
		return "", "", nil
	}
	name = p[1:]
	disk, ok := f.names[name]
	if !ok {
		return name, "", fmt.Errorf("%s: only the memory file%s %s can be used here: %w", path, plural(len(f.names)), strings.Join(f.sorted(), ", "), vfs.ErrNotFound)
	}
	return name, disk, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (f *files) sorted() []string {
	out := make([]string, 0, len(f.names))
	for n := range f.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (f *files) Stat(_ context.Context, path string) (vfs.Entry, error) {
	name, disk, err := f.lookup(path)
	if err != nil {
		return vfs.Entry{}, err
	}
	if name == "" {
		return vfs.Entry{Path: "/", IsDir: true}, nil
	}
	real, _, err := f.place(name).check(disk)
	if err != nil {
		return vfs.Entry{}, fmt.Errorf("%s: %w", path, errOf(err))
	}
	st, err := os.Stat(real)
	if err != nil {
		return vfs.Entry{}, fmt.Errorf("%s: %w", path, errOf(err))
	}
	if !st.Mode().IsRegular() {
		return vfs.Entry{}, fmt.Errorf("%s: not a regular file: %w", path, vfs.ErrPermission)
	}
	return vfs.Entry{Path: "/" + name, Size: st.Size(), ModifiedAt: st.ModTime()}, nil
}

// errOf maps a disk error to the vfs sentinel it stands for.
func errOf(err error) error {
	var no *refusal
	switch {
	case errors.As(err, &no):
		return fmt.Errorf("the memory file is not read or written: %s: %w", no.Reason, vfs.ErrPermission)
	case errors.Is(err, fs.ErrNotExist):
		return vfs.ErrNotFound
	case errors.Is(err, fs.ErrPermission):
		return vfs.ErrPermission
	}
	return err
}

func (f *files) Read(_ context.Context, path string) (string, error) {
	name, disk, err := f.lookup(path)
	if err != nil {
		return "", err
	}
	if name == "" {
		return "", fmt.Errorf("%s: %w", path, vfs.ErrIsDir)
	}
	data, err := f.place(name).read(disk)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, errOf(err))
	}
	return string(data), nil
}

func (f *files) Write(_ context.Context, path, content string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.write(path, content)
}

func (f *files) write(path, content string) error {
	name, disk, err := f.lookup(path)
	if err != nil {
		if errors.Is(err, vfs.ErrNotFound) {
			return fmt.Errorf("%s: only the memory file%s %s can be written here: %w", path, plural(len(f.names)), strings.Join(f.sorted(), ", "), vfs.ErrPermission)
		}
		return err
	}
	if name == "" {
		return fmt.Errorf("%s: %w", path, vfs.ErrIsDir)
	}
	if len(content) > MaxFileBytes {
		return fmt.Errorf("%s: a memory file holds at most %s: %w", path, safefile.Size(MaxFileBytes), vfs.ErrPermission)
	}
	if err := f.place(name).checkDir(filepath.Dir(disk)); err != nil {
		return fmt.Errorf("%s: %w", path, errOf(err))
	}
	if err := os.MkdirAll(filepath.Dir(disk), 0o755); err != nil {
		return fmt.Errorf("%s: %w", path, errOf(err))
	}
	// Write beside the file and rename, so a reader never sees half of it.
	tmp, err := os.CreateTemp(filepath.Dir(disk), "."+filepath.Base(disk)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, errOf(err))
	}
	_, werr := tmp.WriteString(content)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		if st, err := os.Stat(disk); err == nil {
			_ = os.Chmod(tmp.Name(), st.Mode().Perm())
		} else {
			_ = os.Chmod(tmp.Name(), 0o644)
		}
		werr = os.Rename(tmp.Name(), disk)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", path, errOf(werr))
	}
	return nil
}

// Update reads, changes and writes a memory file with no other write of
// this process in between.
func (f *files) Update(ctx context.Context, path string, fn vfs.UpdateFunc) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, err := f.Read(ctx, path)
	if err != nil {
		return err
	}
	updated, err := fn(old)
	if err != nil {
		return err
	}
	return f.write(path, updated)
}

// Delete refuses: memory is changed, not removed.
func (f *files) Delete(_ context.Context, path string) (int, error) {
	return 0, fmt.Errorf("%s: memory files cannot be deleted; edit them instead: %w", path, vfs.ErrPermission)
}

func (f *files) List(ctx context.Context, dir string) ([]vfs.Entry, error) {
	name, _, err := f.lookup(dir)
	if err != nil {
		return nil, err
	}
	if name != "" {
		return nil, fmt.Errorf("%s: %w", dir, vfs.ErrNotDir)
	}
	var out []vfs.Entry
	for _, n := range f.sorted() {
		if e, err := f.Stat(ctx, "/"+n); err == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *files) Walk(ctx context.Context, dir string) iter.Seq2[vfs.Entry, error] {
	return func(yield func(vfs.Entry, error) bool) {
		es, err := f.List(ctx, dir)
		if err != nil {
			yield(vfs.Entry{}, err)
			return
		}
		for _, e := range es {
			if !yield(e, nil) {
				return
			}
		}
	}
}
