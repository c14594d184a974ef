//go:build !linux

package sandbox

import (
	"errors"
	"io/fs"
	"os"
)

// identity has no device and inode numbers to give on other systems: files
// are told apart by their modification time.
func identity(fi fs.FileInfo) fileID { return fileID{ctime: fi.ModTime().UnixNano()} }

// planMounts is never reached: only Linux runs the sandbox.
func (g *guard) planMounts() error { return errors.New("the sandbox runs on Linux only") }

// heldFiles knows no open files on other systems.
func heldFiles() map[fileID]bool { return map[fileID]bool{} }

// openDir opens the directory rel below root for listing.
func openDir(root *os.Root, rel string) (*os.File, error) { return root.Open(rel) }
