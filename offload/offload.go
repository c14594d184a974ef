// Package offload keeps very large texts out of the model's context without
// losing them: a tool result or a user message over a token threshold is
// saved to a file, and the model gets a short notice instead — where the file
// is, how to read it in pages with read_file, and a preview of its first and
// last lines.
//
// Tool results are saved through the call's own view of the filesystem, so
// the write is merged and reported like any tool's write (a file.write event
// with the call's id); the run's messages, events and transcript carry the
// notice. A user message keeps its full text in the run's state: only the
// request sent to the model carries the notice.
//
// Sizes are o200k token counts (package tokens). Texts whose byte length
// cannot exceed a threshold are never tokenised. Only a result's text is
// measured and saved: its other parts, such as images, reach the model
// unchanged after the notice.
package offload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"weak"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// Default thresholds, in o200k tokens.
const (
	DefaultToolResultTokens  = 20000
	DefaultUserMessageTokens = 50000
)

// Name is the middleware's name, also the source of its notice events.
const Name = "offload"

// Config sets the thresholds, in o200k tokens. A text is offloaded when it
// is longer than its threshold; a threshold of 0 turns that kind of
// offloading off. The zero Config offloads nothing; Defaults gives the
// defaults.
type Config struct {
	// ToolResultTokens applies to every tool result, except the file tools,
	// which cap their own output and are never offloaded.
	ToolResultTokens int
	// PerTool overrides ToolResultTokens for the named tools (0 turns
	// offloading off for that tool).
	PerTool map[string]int
	// UserMessageTokens applies to every user message of a model request.
	UserMessageTokens int
}

// Defaults returns the default thresholds.
func Defaults() Config {
	return Config{ToolResultTokens: DefaultToolResultTokens, UserMessageTokens: DefaultUserMessageTokens}
}

// Exempt reports whether the named tool's results are never offloaded: the
// file tools limit their own output, and offloading what read_file returns
// would send the model round in circles.
func Exempt(toolName string) bool { return slices.Contains(fstools.Names, toolName) }

// Validate reports a Config that cannot act as written.
func (c Config) Validate() error {
	if c.ToolResultTokens < 0 || c.UserMessageTokens < 0 {
		return errors.New("offload: thresholds must not be negative (0 turns offloading off)")
	}
	for _, name := range slices.Sorted(maps.Keys(c.PerTool)) {
		switch n := c.PerTool[name]; {
		case n < 0:
			return fmt.Errorf("offload: the threshold for tool %s must not be negative (0 turns offloading off for it)", name)
		case Exempt(name):
			return fmt.Errorf("offload: %s caps its own output and is never offloaded; remove it from the per-tool thresholds", name)
		}
	}
	return nil
}

// New returns the offloading middleware for cfg. It has no tools and no
// prompt section; it is safe to share between agents and runs.
func New(cfg Config) (agent.Middleware, error) {
	if err := cfg.Validate(); err != nil {
		return agent.Middleware{}, err
	}
	cfg.PerTool = maps.Clone(cfg.PerTool) // the caller may change theirs
	o := &offloader{cfg: cfg, memo: map[[sha256.Size]byte]measure{}}
	m := agent.Middleware{Name: Name}
	if o.anyToolLimit() {
		m.WrapTool = o.wrapTool
	}
	if o.cfg.UserMessageTokens > 0 {
		m.BeforeModel = o.beforeModel
	}
	return m, nil
}

type offloader struct {
	cfg Config

	mu   sync.Mutex
	memo map[[sha256.Size]byte]measure // token counts of long user messages
	seen map[weak.Pointer[agent.State]]*seen

	looked atomic.Int64 // messages beforeModel looked at, for its tests
}

// maxMemo bounds the token-count memo; it is cleared when full.
const maxMemo = 1024

func (o *offloader) anyToolLimit() bool {
	if o.cfg.ToolResultTokens > 0 {
		return true
	}
	for _, n := range o.cfg.PerTool {
		if n > 0 {
			return true
		}
	}
	return false
}

// limitFor is the threshold of a tool's results (0: never offloaded).
func (o *offloader) limitFor(name string) int {
	if Exempt(name) {
		return 0
	}
	if n, ok := o.cfg.PerTool[name]; ok {
		return n
	}
	return o.cfg.ToolResultTokens
}

// mayExceed reports whether s could be longer than limit tokens. A token
// covers at least one byte of valid UTF-8, so a valid text of at most limit
// bytes cannot; invalid bytes are repaired before counting and may cost
// more, so such texts are always counted.
func mayExceed(s string, limit int) bool {
	return len(s) > limit || !utf8.ValidString(s)
}

// prefixBytesPerToken bounds the tokenising of very long texts: a text over
// this many bytes per token of its limit is first measured by a prefix of
// that size, which for ordinary text is already far over the limit.
const prefixBytesPerToken = 8

// exactBelow is the byte length under which a text is always counted in
// full: counting it costs little. A variable for tests.
var exactBelow = 256 << 10

// prefixMargin absorbs the tokens a cut can merge or split at its edge.
const prefixMargin = 8

// measure is the token count of a text against a limit: the exact count, or
// (over, not exact) when a prefix alone was already over it.
type measure struct {
	n     int
	exact bool
}

func (m measure) over(limit int) bool { return m.n > limit }

func (m measure) String() string {
	if m.exact {
		return count(m.n, "token")
	}
	return "over " + count(m.n, "token")
}

// measureText counts the o200k tokens of s as far as needed to compare it
// with limit. Texts that cannot exceed it by their byte length are not
// counted at all (measure{0, true} is returned for them).
func measureText(s string, limit int) measure {
	if !mayExceed(s, limit) {
		return measure{exact: true}
	}
	if cut := prefixBytesPerToken * limit; len(s) > 2*cut && len(s) > exactBelow {
		// Cut at a line end when there is one near, else at a rune start.
		if i := strings.LastIndexByte(s[:cut], '\n'); i > cut/2 {
			cut = i + 1
		}
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if n := tokens.Count(tokens.O200k, s[:cut]); n > limit+prefixMargin {
			return measure{n: n - prefixMargin}
		}
	}
	return measure{n: tokens.Count(tokens.O200k, s), exact: true}
}

func (o *offloader) wrapTool(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
	res, err := next(ctx, call)
	if err != nil {
		return res, err
	}
	name := call.Call.Name
	limit := o.limitFor(name)
	if limit <= 0 {
		return res, nil
	}
	n := measureText(res.Content, limit)
	if !n.over(limit) {
		return res, nil
	}
	env := call.Env
	if env == nil || env.Files == nil {
		return res, nil
	}
	path, err := saveResult(ctx, env.Files, ResultPath(env.Agent, env.CallID), res.Content)
	if err != nil {
		env.Report(fmt.Sprintf("The result of %s (%s) could not be saved to a file (%v), so it is passed on in full.", name, n, err))
		return res, nil
	}
	res.Content = resultNotice(name, path, n, res.Content)
	return res, nil
}

// saveResult writes content to path, or beside it when path already holds
// something else (a call id reused across runs, a directory), and returns
// where it went.
func saveResult(ctx context.Context, files vfs.Backend, path, content string) (string, error) {
	old, err := files.Read(ctx, path)
	switch {
	case err == nil && old == content:
		return path, nil
	case err == nil || !errors.Is(err, vfs.ErrNotFound):
		path += "-" + shortHash(content)[:8]
		if old, err := files.Read(ctx, path); err == nil && old == content {
			return path, nil
		}
	}
	return path, files.Write(ctx, path, content)
}

func resultNotice(toolName, path string, n measure, content string) string {
	preview, lines := Preview(content)
	var b strings.Builder
	fmt.Fprintf(&b, "[This result of %s was too large to show here (%s, %s, %s). It was saved in full to %s.\n",
		toolName, n, safefile.Size(int64(len(content))), count(lines, "line"), path)
	fmt.Fprintf(&b, "Read it in pages with read_file: file_path %q, offset = the first line to read (0-based), limit = how many lines; each page says where the next one starts. grep can search it too.]\n\n", path)
	writePreview(&b, preview, lines)
	return b.String()
}

func writePreview(b *strings.Builder, preview string, lines int) {
	if lines > 2*PreviewLines {
		fmt.Fprintf(b, "Its first and last %d lines:\n", PreviewLines)
	} else {
		b.WriteString("Its lines:\n")
	}
	b.WriteString(preview)
}

func (o *offloader) beforeModel(ctx context.Context, step agent.StepInfo, req *llm.Request) error {
	limit := o.cfg.UserMessageTokens
	var out []llm.Message
	for _, i := range o.candidates(step.State, req.Messages, limit) {
		m := req.Messages[i]
		sum := sha256.Sum256([]byte(m.Content))
		n := o.measure(sum, m.Content, limit)
		if !n.over(limit) {
			continue
		}
		path := UserMessageDir + "/" + hex.EncodeToString(sum[:8]) + ".md"
		if err := saveMessage(ctx, step, path, m.Content); err != nil {
			if step.Emit != nil {
				step.Emit(agent.Event{Type: agent.Notice, Time: time.Now(), Notice: &agent.NoticeInfo{Source: Name,
					Text: fmt.Sprintf("A user message of %s could not be saved to %s (%v), so it is sent in full.", n, path, err)}})
			}
			continue
		}
		if out == nil {
			out = slices.Clone(req.Messages)
		}
		out[i] = withText(m, messageNotice(path, n, m.Content))
	}
	if out != nil {
		req.Messages = out
	}
	return nil
}

// seen is what beforeModel found in one run's request messages at its last
// look: a run's history only grows, so the next round need look only at the
// messages added since.
type seen struct {
	base  *llm.Message // the first message of the slice it looked at
	n     int          // how many messages it looked at
	cands []int        // the user messages among them that may exceed the limit
}

// candidates returns the indexes of the user messages of msgs that may be
// over limit, in order. For a run's state (the loop's requests) it looks
// only at the messages added since its last look, when msgs still holds
// those it looked at: the same backing array, at least as long. A history
// rewritten (a new slice, as after a compaction) is looked at in full.
func (o *offloader) candidates(state *agent.State, msgs []llm.Message, limit int) []int {
	var s *seen
	if state != nil {
		s = o.seenFor(state)
	} else {
		s = &seen{}
	}
	start := 0
	if s.n > 0 && len(msgs) >= s.n && &msgs[0] == s.base {
		start = s.n
	} else {
		s.cands = s.cands[:0]
	}
	o.looked.Add(int64(len(msgs) - start))
	for i := start; i < len(msgs); i++ {
		if m := &msgs[i]; m.Role == llm.RoleUser && mayExceed(m.Content, limit) {
			s.cands = append(s.cands, i)
		}
	}
	s.n, s.base = len(msgs), nil
	if len(msgs) > 0 {
		s.base = &msgs[0]
	}
	return s.cands
}

// seenFor returns what was seen of the run whose state is state, forgotten
// once the state is.
func (o *offloader) seenFor(state *agent.State) *seen {
	key := weak.Make(state)
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.seen[key]
	if s == nil {
		s = &seen{}
		if o.seen == nil {
			o.seen = map[weak.Pointer[agent.State]]*seen{}
		}
		o.seen[key] = s
		runtime.AddCleanup(state, o.forget, key)
	}
	return s
}

// forget drops what was seen of a run whose state is gone.
func (o *offloader) forget(key weak.Pointer[agent.State]) {
	o.mu.Lock()
	delete(o.seen, key)
	o.mu.Unlock()
}

// withText returns m with its text replaced by text. A message with parts
// (an image next to the text) keeps its other parts; the new text takes the
// place of the first text part.
func withText(m llm.Message, text string) llm.Message {
	if len(m.Parts) == 0 {
		m.Content = text
		return m
	}
	parts := make([]llm.Part, 0, len(m.Parts))
	placed := false
	for _, p := range m.Parts {
		if p.Type != llm.PartText {
			parts = append(parts, p)
		} else if !placed {
			parts = append(parts, llm.TextPart(text))
			placed = true
		}
	}
	m.SetParts(parts)
	return m
}

// measure measures a long user message against limit, memoised by its
// hash: the same messages are re-sent on every step.
func (o *offloader) measure(sum [sha256.Size]byte, content string, limit int) measure {
	o.mu.Lock()
	n, ok := o.memo[sum]
	o.mu.Unlock()
	if ok {
		return n
	}
	n = measureText(content, limit)
	o.mu.Lock()
	if len(o.memo) >= maxMemo {
		clear(o.memo)
	}
	o.memo[sum] = n
	o.mu.Unlock()
	return n
}

// saveMessage writes a user message to the run's files unless the file
// already holds it (it was saved on an earlier step), and reports the write
// as a file.write event.
func saveMessage(ctx context.Context, step agent.StepInfo, path, content string) error {
	if step.Files == nil {
		return errors.New("the run has no filesystem")
	}
	if e, err := step.Files.Stat(ctx, path); err == nil && !e.IsDir && e.Size == int64(len(content)) {
		if old, err := step.Files.Read(ctx, path); err == nil && old == content {
			return nil
		}
	}
	if err := step.Files.Write(ctx, path, content); err != nil {
		return err
	}
	if step.Emit != nil {
		step.Emit(agent.Event{Type: agent.FileWrite, Time: time.Now(), File: &agent.FileInfo{Path: path, Bytes: len(content)}})
	}
	return nil
}

func messageNotice(path string, n measure, content string) string {
	preview, lines := Preview(content)
	var b strings.Builder
	fmt.Fprintf(&b, "[This user message was too long to include here (%s, %s, %s). Its full text was saved to %s.\n",
		n, safefile.Size(int64(len(content))), count(lines, "line"), path)
	fmt.Fprintf(&b, "Read it in pages with read_file: file_path %q, offset = the first line to read (0-based), limit = how many lines. grep can search it too.]\n\n", path)
	writePreview(&b, preview, lines)
	return b.String()
}
