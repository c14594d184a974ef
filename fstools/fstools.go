// Package fstools provides the agent's seven file tools: ls, read_file,
// write_file, edit_file, glob, grep and delete.
//
// The tools work on whatever vfs.Backend the call's tool.Env carries in
// Files (the run's in-state files, a copy-on-write layer of them, a tracked
// real directory...), never on a global, so one set of tools serves every
// agent and every parallel call. Every path argument goes through vfs.Clean.
// Problems the model can fix (a missing file, an ambiguous edit, a bad
// offset) come back as error results whose text says what to do next.
package fstools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// Default limits, used for the zero fields of Options.
const (
	DefaultReadLimit      = 100
	DefaultMaxLineChars   = 2000
	DefaultGrepMaxResults = 200
	DefaultGlobMaxResults = 500
	// DefaultLsMaxResults caps the entries ls lists at once.
	DefaultLsMaxResults = 500
	// DefaultMaxOutputChars caps the text read_file, ls, glob and grep
	// answer with, in characters, so no file tool needs offloading.
	DefaultMaxOutputChars = 80_000
	// DefaultGrepMaxFileBytes is the largest file grep loads to search.
	DefaultGrepMaxFileBytes = 10 << 20
	// DefaultMaxImageBytes is the largest image read_file hands to a model
	// that reads images.
	DefaultMaxImageBytes = 5 << 20
)

// Names lists the tools' names in the order Tools returns them.
var Names = []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "delete"}

// Options tunes the tools' limits. The zero value gives the defaults; a
// field left at zero (or negative) takes its default.
type Options struct {
	// ReadLimit is how many lines read_file returns when the call gives no
	// limit (DefaultReadLimit).
	ReadLimit int
	// MaxLineChars is the longest piece of one line shown at once, in
	// characters: read_file splits longer lines into numbered chunks and grep
	// cuts them (DefaultMaxLineChars).
	MaxLineChars int
	// GrepMaxResults caps grep's output entries when the call gives no
	// max_count (DefaultGrepMaxResults).
	GrepMaxResults int
	// GlobMaxResults caps how many paths glob returns (DefaultGlobMaxResults).
	GlobMaxResults int
	// LsMaxResults caps how many entries ls lists (DefaultLsMaxResults).
	LsMaxResults int
	// MaxOutputChars caps the characters of one answer of read_file, ls,
	// glob and grep; a notice says what was left out and how to get it
	// (DefaultMaxOutputChars).
	MaxOutputChars int
	// GrepMaxFileBytes is the largest file grep searches; larger ones are
	// skipped and named (DefaultGrepMaxFileBytes). Files already in memory
	// are always searched.
	GrepMaxFileBytes int64
	// MaxImageBytes is the largest image (PNG, JPEG, GIF or WebP) read_file
	// returns as an image part to a model that reads images; a larger one
	// gets a note with its size (DefaultMaxImageBytes).
	MaxImageBytes int64
}

func (o Options) withDefaults() Options {
	if o.ReadLimit <= 0 {
		o.ReadLimit = DefaultReadLimit
	}
	if o.MaxLineChars <= 0 {
		o.MaxLineChars = DefaultMaxLineChars
	}
	if o.GrepMaxResults <= 0 {
		o.GrepMaxResults = DefaultGrepMaxResults
	}
	if o.GlobMaxResults <= 0 {
		o.GlobMaxResults = DefaultGlobMaxResults
	}
	if o.LsMaxResults <= 0 {
		o.LsMaxResults = DefaultLsMaxResults
	}
	if o.MaxOutputChars <= 0 {
		o.MaxOutputChars = DefaultMaxOutputChars
	}
	if o.GrepMaxFileBytes <= 0 {
		o.GrepMaxFileBytes = DefaultGrepMaxFileBytes
	}
	if o.MaxImageBytes <= 0 {
		o.MaxImageBytes = DefaultMaxImageBytes
	}
	return o
}

var defaultTools = build(Options{})

// Tools returns the seven file tools with the default limits, in the order
// of Names. The tools are shared, immutable and safe for concurrent use; the
// slice is the caller's.
func Tools() []tool.Tool { return append([]tool.Tool(nil), defaultTools...) }

// New returns the seven file tools with the given limits, in the order of
// Names. New(Options{}) is Tools().
func New(opts Options) []tool.Tool {
	if opts.withDefaults() == (Options{}).withDefaults() {
		return Tools()
	}
	return build(opts)
}

func build(opts Options) []tool.Tool {
	o := opts.withDefaults()
	tools := []tool.Tool{
		lsTool(o), readTool(o), writeTool(o), editTool(o), globTool(o), grepTool(o), deleteTool(o),
	}
	for _, t := range tools {
		built.Store(t, true)
	}
	return tools
}

// built holds every file tool this package made, for Made.
var built sync.Map

// Made reports whether t is one of the file tools Tools or New returned
// (not execute): tools that touch nothing but the call's files
// (tool.Env.Files). Engines that replay a run's code, such as a workflow
// engine, may run them again where the files are the run's own, in memory.
func Made(t tool.Tool) bool {
	if t == nil || !reflect.TypeOf(t).Comparable() {
		return false
	}
	_, ok := built.Load(t)
	return ok
}

// define builds one tool from a typed function and a hand-written schema.
func define[In any](name, desc, schema string, fn func(ctx context.Context, fs vfs.Backend, in In) (tool.Result, error), opts ...tool.Option) tool.Tool {
	return defineEnv(name, desc, schema, func(ctx context.Context, env *tool.Env, in In) (tool.Result, error) {
		return fn(ctx, env.Files, in)
	}, opts...)
}

// defineEnv is define for a tool that needs more of the call's env than
// its files; env and env.Files are never nil in fn.
func defineEnv[In any](name, desc, schema string, fn func(ctx context.Context, env *tool.Env, in In) (tool.Result, error), opts ...tool.Option) tool.Tool {
	return tool.MustFunc(name, desc, func(ctx context.Context, env *tool.Env, in In) (tool.Result, error) {
		if env == nil || env.Files == nil {
			return tool.Errorf("Error: no filesystem is attached to this agent, so %s cannot run.", name), nil
		}
		if err := ctx.Err(); err != nil {
			return tool.Result{}, context.Cause(ctx)
		}
		return fn(ctx, env, in)
	}, append([]tool.Option{tool.WithSchema(json.RawMessage(schema))}, opts...)...)
}

// cleanPath normalises a path argument; def replaces an empty optional one.
func cleanPath(p, def string) (string, *tool.Result) {
	if p == "" && def != "" {
		p = def
	}
	c, err := vfs.Clean(p)
	if err != nil {
		r := tool.Errorf("Error: %v.", err)
		return "", &r
	}
	return c, nil
}

// failed answers a backend error that no tool-specific message covers. A
// cancelled context is returned as a Go error so the loop stops.
func failed(ctx context.Context, what string, err error) (tool.Result, error) {
	if ctx.Err() != nil {
		return tool.Result{}, context.Cause(ctx)
	}
	var denied *vfs.DeniedError
	if errors.As(err, &denied) {
		return tool.Errorf("Error: %s: %s.", what, denied.Reason), nil
	}
	if errors.Is(err, vfs.ErrPermission) {
		return tool.Errorf("Error: %s: permission denied. This path cannot be used; try another.", what), nil
	}
	return tool.Errorf("Error: %s failed: %v.", what, err), nil
}

// fileAncestor returns the nearest proper ancestor of p that is a file.
func fileAncestor(ctx context.Context, fs vfs.Backend, p string) string {
	for d := vfs.Parent(p); d != "/"; d = vfs.Parent(d) {
		if e, err := fs.Stat(ctx, d); err == nil && !e.IsDir {
			return d
		}
	}
	return ""
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// countLines counts lines as read_file numbers them: a final newline ends
// the last line rather than starting an empty one.
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// splitLines splits content into the lines read_file numbers.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// noticeReserve is the part of the character cap kept for the notices that
// close an answer.
const noticeReserve = 300

// answerBudget is how many characters of an answer the entries or lines may
// take: MaxOutputChars less room for the closing notices.
func (o Options) answerBudget() int {
	return max(o.MaxOutputChars-noticeReserve, o.MaxOutputChars/2)
}

// thousands writes n with comma separators: 80,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// sniffLen is how much of a file's start decides whether it is text.
const sniffLen = 8000

// binaryKind says what binary data head (a file's first bytes) starts, such
// as "image/png" or "binary data"; it is "" for text. Control bytes that no
// text holds (NUL among them) make it binary, and so does a known binary
// signature followed by bytes that are not UTF-8; a signature alone does
// not, so a text that happens to start with "BM" or "ID3" stays text.
func binaryKind(head []byte) string {
	ctrl := hasControlBytes(head)
	if !ctrl && validUTF8Start(head) {
		return "" // text, whatever its start looks like: no need to sniff
	}
	mime := http.DetectContentType(head)
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = mime[:i]
	}
	text := strings.HasPrefix(mime, "text/") || mime == "application/postscript"
	if !ctrl && text {
		return ""
	}
	if text || mime == "application/octet-stream" {
		return "binary data"
	}
	return mime
}

// imageTypes are the image formats read_file passes to models that read
// images: the ones every provider with image input accepts.
var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// imageType returns the media type of the image head starts, by its
// content (never its name), or "" when it is not one of imageTypes.
//
// It checks the four formats' signatures itself, the same ones
// http.DetectContentType checks (FuzzImageType compares the two): that
// sniffs for dozens of types, a cost every read of a text file paid.
func imageType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 14 && bytes.HasPrefix(head, []byte("RIFF")) && string(head[8:14]) == "WEBPVP":
		return "image/webp"
	}
	return ""
}

// hasControlBytes reports whether b holds a control byte other than tab,
// newlines, form feed and escape.
func hasControlBytes(b []byte) bool {
	for _, c := range b {
		if c <= 0x08 || c == 0x0b || c >= 0x0e && c <= 0x1a || c >= 0x1c && c <= 0x1f {
			return true
		}
	}
	return false
}

// validUTF8Start reports whether b is UTF-8, allowing a character cut off at
// its end.
func validUTF8Start(b []byte) bool {
	for cut := 0; cut <= 3 && cut <= len(b); cut++ {
		if utf8.Valid(b[:len(b)-cut]) {
			return true
		}
	}
	return false
}

// truncateRunes cuts s to at most n characters, marking a cut with "...".
func truncateRunes(s string, n int) string {
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + "..."
		}
		count++
	}
	return s
}
