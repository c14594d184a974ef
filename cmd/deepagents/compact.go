package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/runner"
)

// This file is /compact in an interactive session: summarise the thread's
// older messages now, with an optional focus for the summary.

// compactCommand reports whether line is /compact, and its focus text.
func compactCommand(line string) (focus string, ok bool) {
	rest, found := strings.CutPrefix(line, "/compact")
	if !found || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// compactNow summarises the session's thread with the agent's model and
// prints what it saved. The summary is recorded in the thread by the next
// turn (or /resume), before its first model call.
func (s *session) compactNow(ctx context.Context, focus string) {
	if s.thread == "" || s.setup.saver == nil {
		fmt.Fprintln(s.stderr, "Nothing to compact yet: this session has no conversation.")
		return
	}
	rs, err := runner.LoadRunState(ctx, s.setup.saver, s.thread, agent.RootPath(s.setup.agent.Name()), false)
	if errors.Is(err, checkpoint.ErrNotFound) {
		fmt.Fprintln(s.stderr, "Nothing to compact yet: this session has no conversation.")
		return
	}
	if err != nil {
		fmt.Fprintf(s.stderr, "/compact: reading thread %s: %v\n", s.thread, err)
		return
	}
	if s.compaction != nil && s.compaction.Done(&agent.State{Values: rs.Values}) {
		s.compaction = nil
	}
	if s.compaction != nil {
		fmt.Fprintln(s.stderr, "/compact: the last compaction is not recorded yet; send a message first.")
		return
	}
	cfg := compact.Config{Window: s.setup.contextWindow, Model: s.setup.config.Model, TodosInTail: s.setup.config.Todos}
	if c := s.setup.config.Compaction; c != nil {
		cfg.KeepMessages, cfg.SummarizerWindow = c.KeepMessages, c.SummarizerWindow
		if c.Window > 0 {
			cfg.Window = c.Window
		}
		if c.Model != nil {
			cfg.Model = c.Model
		}
	}
	fmt.Fprintln(s.stderr, "Compacting the conversation…")
	m, err := compact.Compact(ctx, cfg, rs, focus)
	if errors.Is(err, compact.ErrNothingToCompact) {
		fmt.Fprintln(s.stderr, "Not compacted: the conversation is still short; everything in it is in the part always kept.")
		return
	}
	if err != nil {
		fmt.Fprintf(s.stderr, "/compact: %v\n", err)
		return
	}
	s.compaction = m
	info := m.Info()
	msgs := "messages"
	if info.Evicted == 1 {
		msgs = "message"
	}
	fmt.Fprintf(s.stderr, "Compacted: %d earlier %s summarised; the conversation is about %s tokens instead of %s (%s saved).\n",
		info.Evicted, msgs, thousands(info.TokensAfter), thousands(info.TokensBefore), thousands(info.TokensBefore-info.TokensAfter))
	if info.File != "" {
		fmt.Fprintf(s.stderr, "The summarised messages will be kept in full in %s.\n", info.File)
	}
	fmt.Fprintln(s.stderr, "Your next message continues from the summary.")
}

// withCompaction gives a turn the session's pending compaction to record.
func (s *session) withCompaction(ctx context.Context) context.Context {
	return compact.WithManual(ctx, s.compaction)
}

// settleCompaction forgets the pending compaction once the thread holds it
// (or has compacted past it).
func (s *session) settleCompaction(ctx context.Context) {
	if s.compaction == nil || s.setup.saver == nil || s.thread == "" {
		return
	}
	rs, err := runner.LoadRunState(ctx, s.setup.saver, s.thread, agent.RootPath(s.setup.agent.Name()), false)
	if err == nil && s.compaction.Done(&agent.State{Values: rs.Values}) {
		s.compaction = nil
	}
}
