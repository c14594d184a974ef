package osfs

// WaitSweep waits until the sweep of stale temporary files that New started
// is over.
func WaitSweep(f *FS) { <-f.swept }
