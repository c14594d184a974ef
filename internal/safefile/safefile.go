// Package safefile reads the files the command line is pointed at (config
// files, agent files, scenarios, prompts) with the guarantees a user expects:
// only regular files, never more than a size cap, never a hang on a FIFO or a
// device.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrTooLarge is wrapped by the error of a file over the cap.
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is wrapped by the error of a path that is not a regular file
// (a directory, FIFO, socket or device).
var ErrNotRegular = errors.New("not a regular file")

// Read returns the contents of the regular file at path if it holds at most
// max bytes. It opens without blocking, so a FIFO is refused instead of
// waiting for a writer, and it reads at most max+1 bytes whatever the file
// claims its size is.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, path, max)
}

// ReadIn is Read of the file name inside root: a name or symbolic link that
// would lead out of root is refused (os.Root's rule), even one swapped in
// while the file is being opened.
func ReadIn(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, name, max)
}

// readOpen reads the open file f (at path, for errors) as Read does.
func readOpen(f *os.File, path string, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, Kind(fi.Mode()))}
	}
	if fi.Size() > max {
		return nil, tooLarge(path, fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, tooLarge(path, int64(len(data)), max)
	}
	return data, nil
}

// ReadFrom reads at most max bytes from r (standard input, say) and fails
// with ErrTooLarge if there is more. name labels the error.
func ReadFrom(r io.Reader, name string, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: more than %s (the limit)", ErrTooLarge, Size(max))}
	}
	return data, nil
}

func tooLarge(path string, size, max int64) error {
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %s, the limit is %s", ErrTooLarge, Size(size), Size(max))}
}

// Kind names what a file that is not a regular file is, for errors: "a
// directory", "a named pipe", ...
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// Size renders a byte count for people: 512 B, 1.5 KiB, 10 MiB.
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	s := fmt.Sprintf("%.1f", v)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + " " + "KMGT"[exp:exp+1] + "iB"
}

// WithoutPath returns the cause of a *fs.PathError about path, for messages
// that name the path already; any other error is returned as it is.
func WithoutPath(err error, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Err
	}
	return err
}
