package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sync"
)

// noticeLog shows the notices that say where a command's requests go (the
// endpoint notice) and how its commands run (the sandbox notice) once per
// thread: a thread remembers those that applied to its turn, and a later
// command on it shows only the ones that changed. A new thread shows all.
// The lines that apply to this command are kept, to be remembered with its
// turn: as digests (noticeDigest), since an endpoint's URL may carry a
// secret the thread database need not hold. A nil *noticeLog shows every
// line.
type noticeLog struct {
	mu sync.Mutex
	// seen are the digests of the lines the thread's turn already showed.
	seen map[string]bool
	// now are the digests of the lines that apply to this command, in
	// order.
	now []string
}

// noticeDigest stands for a notice line in a thread's record.
func noticeDigest(line string) string {
	sum := sha256.Sum256([]byte(line))
	return hex.EncodeToString(sum[:16])
}

// remember takes the digests of the lines a thread's turn showed.
func (l *noticeLog) remember(digests []string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range digests {
		if l.seen == nil {
			l.seen = map[string]bool{}
		}
		l.seen[d] = true
	}
}

// show writes line to w (with a newline) unless the thread has shown it
// already, and keeps it as one that applies to this command.
func (l *noticeLog) show(w io.Writer, line string) {
	if l == nil {
		fmt.Fprintln(w, line)
		return
	}
	d := noticeDigest(line)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.now, d) {
		l.now = append(l.now, d)
	}
	if !l.seen[d] {
		fmt.Fprintln(w, line)
	}
}

// lines are the digests of the lines that apply to this command.
func (l *noticeLog) lines() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.now)
}
