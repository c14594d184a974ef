package main

import (
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
// turn. A nil *noticeLog shows every line.
type noticeLog struct {
	mu sync.Mutex
	// seen are the lines the thread's turn already showed.
	seen map[string]bool
	// now are the lines that apply to this command, in order.
	now []string
}

// remember takes the lines a thread's turn showed.
func (l *noticeLog) remember(lines []string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range lines {
		if l.seen == nil {
			l.seen = map[string]bool{}
		}
		l.seen[line] = true
	}
}

// show writes line to w (with a newline) unless the thread has shown it
// already, and keeps it as one that applies to this command.
func (l *noticeLog) show(w io.Writer, line string) {
	if l == nil {
		fmt.Fprintln(w, line)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.now, line) {
		l.now = append(l.now, line)
	}
	if !l.seen[line] {
		fmt.Fprintln(w, line)
	}
}

// lines are the lines that apply to this command.
func (l *noticeLog) lines() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.now)
}
