package vfs

import "context"

// SearchRequest is one search of the file tools (grep or glob) as a whole:
// what to find, where, and the tool's caps, so that a backend far from its
// files can run it where they are and send back only the answer.
type SearchRequest struct {
	// Op is "grep" or "glob".
	Op string `json:"op"`
	// Pattern is grep's literal text or glob's pattern.
	Pattern string `json:"pattern"`
	// Path is the clean path searched: a directory, or a file for grep.
	Path string `json:"path"`
	// Glob, for grep, keeps only the files it matches ("" keeps all).
	Glob string `json:"glob,omitempty"`
	// Mode is grep's output mode: files_with_matches, content or count.
	Mode string `json:"mode,omitempty"`
	// Limit is how many entries are kept, Budget how many characters
	// (each entry plus a newline) they may take together.
	Limit  int `json:"limit"`
	Budget int `json:"budget"`
	// MaxLineChars cuts a line of grep's content mode; MaxFileBytes is the
	// largest file grep reads from a stream.
	MaxLineChars int   `json:"max_line_chars,omitempty"`
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
	// Rules are the read rules of the wrappers the search went through on
	// its way (rules of package perm, one list per wrapper, outermost
	// first, each rule as perm.Rules.Encode writes it): the search applies them as
	// those wrappers would, so it never returns a path they hide.
	Rules [][]string `json:"rules,omitempty"`
	// Exclude names directories whose files the search leaves out, with
	// any file at a parent of one: the mount points of a Composite, which
	// searches them apart. Part says the answer is one of several the
	// caller merges: the files are searched in path order, and the result
	// says which file each entry is of (Paths) and where the budget
	// stopped (CutAt).
	Exclude []string `json:"exclude,omitempty"`
	Part    bool     `json:"part,omitempty"`
	// Mount, for a part, is the directory at which the caller mounts the
	// backend searched: the search runs over its files shown below
	// Mount, and Path, Exclude, Rules and the answer are the caller's
	// paths.
	Mount string `json:"mount,omitempty"`
	// OuterRules, with Mount, is how many of Rules (the first) are the
	// caller's, on its paths; the others are of wrappers of the mounted
	// backend, on the backend's own paths.
	OuterRules int `json:"outer_rules,omitempty"`
}

// SearchResult is the answer to a SearchRequest, before the tool words it.
type SearchResult struct {
	// Missing says Path does not exist; IsFile that it is a file where glob
	// wants a directory.
	Missing bool `json:"missing,omitempty"`
	IsFile  bool `json:"is_file,omitempty"`
	// Entries are the matches kept, in order; Total counts all of them.
	Entries []string `json:"entries,omitempty"`
	Total   int      `json:"total,omitempty"`
	// Skipped are the first files grep did not search, and why (as many
	// as the tool names); SkippedTotal counts them all.
	Skipped      []SearchSkip `json:"skipped,omitempty"`
	SkippedTotal int          `json:"skipped_total,omitempty"`
	// Denied is set when a rule refused the search itself, so that the
	// tool names the rule as it does in process.
	Denied *DeniedError `json:"denied,omitempty"`
	// Paths, for a Part request, is the file of each entry kept ("" for
	// the file of the entry before); CutAt is the file of the first entry
	// the budget left out ("" when none was, or the limit stopped it).
	Paths []string `json:"paths,omitempty"`
	CutAt string   `json:"cut_at,omitempty"`
	// Part echoes the request's Part: a backend that answers a part
	// without it (an older worker) did not search it as one, and the
	// caller does not use its answer.
	Part bool `json:"part,omitempty"`
}

// SearchSkip is a file a search did not read, and why.
type SearchSkip struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// Searcher is a Backend that can run a whole search itself, in one call:
// a directory on another machine searches there rather than sending every
// file it reads.
type Searcher interface {
	Backend
	// Search runs req. ok is false when this backend cannot take req (a
	// path it does not own whole, say): the caller then searches file by
	// file through the Backend methods, as for any backend.
	Search(ctx context.Context, req SearchRequest) (res SearchResult, ok bool, err error)
}

// Search runs req on b in one call when b, or the backend it wraps, is a
// Searcher that takes it; ok is false otherwise. It sees through Tracked
// views and the unlayered view of a Composite; other wrappers take part
// by implementing Searcher themselves (applying their rules to the
// request), so that a wrapper that does not is never bypassed.
func Search(ctx context.Context, b Backend, req SearchRequest) (SearchResult, bool, error) {
	for range 16 {
		switch x := b.(type) {
		case Searcher:
			return x.Search(ctx, req)
		case *Tracked:
			b = x.Backend
		case unlayered:
			b = x.c
		default:
			return SearchResult{}, false, nil
		}
	}
	return SearchResult{}, false, nil
}
