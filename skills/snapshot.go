package skills

import (
	"context"
	"fmt"
	"strings"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// MaxSnapshotBytes caps the files a snapshot keeps in memory (64 MiB in
// all), so that a folder of large assets cannot exhaust a process.
const MaxSnapshotBytes = 64 << 20

// MaxSnapshotFiles caps how many files a snapshot keeps (10,000 in all),
// so that a folder of many small files cannot make a worker's start, and
// its memory, grow without bound.
const MaxSnapshotFiles = 10000

// Snapshot returns a loader that reads its sources once, now: the skills,
// the warnings loading them gave, and every file of their folders are kept
// in memory, and neither Current nor the backend of FS looks at the disk
// again. It is for agents whose middleware must do no I/O (a Temporal
// workflow's) and must see the same skills on every replay; edits on disk
// are seen only by a new snapshot. A file of a skill folder that cannot be
// read is left out, as it could not be read from the folder either. It
// fails on an invalid prefix, or when the folders hold more than
// MaxSnapshotBytes or MaxSnapshotFiles.
func Snapshot(prefix string, sources ...Source) (*Loader, error) {
	l, err := NewLoader(prefix, sources...)
	if err != nil {
		return nil, err
	}
	set := Load(l.prefix, sources...)
	files := map[string]vfs.File{}
	total := 0
	ctx := context.Background()
	for _, sk := range set.Skills {
		root, err := osfs.New(sk.Dir, osfs.NoSweep(), osfs.MaxFileBytes(MaxFileSize))
		if err != nil {
			continue
		}
		for e, err := range root.Walk(ctx, "/") {
			if err != nil || e.IsDir {
				continue
			}
			if len(files) == MaxSnapshotFiles {
				_ = root.Close()
				return nil, fmt.Errorf("skills: the skill folders hold more than %d files (skill %q at %s): move files that are not the skill's out of them", MaxSnapshotFiles, sk.Name, sk.Dir)
			}
			text, err := root.Read(ctx, e.Path)
			if err != nil {
				continue
			}
			if total += len(text); total > MaxSnapshotBytes {
				_ = root.Close()
				return nil, fmt.Errorf("skills: the skill folders hold more than %d MiB (skill %q at %s): move large files out of them", MaxSnapshotBytes>>20, sk.Name, sk.Dir)
			}
			files["/"+sk.Name+"/"+strings.TrimPrefix(e.Path, "/")] = vfs.File{Content: text, CreatedAt: e.ModifiedAt, ModifiedAt: e.ModifiedAt}
		}
		_ = root.Close()
	}
	l.set, l.fixed, l.mem = set, true, vfs.NewMemory(files)
	return l, nil
}
