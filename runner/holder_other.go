//go:build !linux

package runner

// hostSpace is empty where processes that share a host name share their
// process ids too.
func hostSpace() string { return "" }

const hostSpaced = false
