package fstools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// Bounds on glob patterns. doublestar tries brace alternatives one
// combination at a time, so their product must stay small; no real pattern
// comes near either bound.
const (
	maxPatternLen   = 1000
	maxAlternatives = 1000
)

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

func globTool(o Options) tool.Tool {
	desc := fmt.Sprintf("Find files by glob: * ? [a-z] {a,b}, ** for any depth. A pattern without / matches file names at any depth; otherwise it is relative to path, or absolute if it starts with /. Returns sorted paths, at most %d.",
		o.GlobMaxResults)
	return define("glob", desc,
		`{"type":"object","properties":{"pattern":{"type":"string","description":"Glob, e.g. *.py or src/**/*.ts."},"path":{"type":"string","description":"Directory to search.","default":"/"}},"required":["pattern"],"additionalProperties":false}`,
		func(ctx context.Context, fs vfs.Backend, in globArgs) (tool.Result, error) {
			return runGlob(ctx, fs, in, o)
		})
}

// matcher is a compiled glob with the rules both glob and grep use.
//
// Beyond doublestar's syntax it follows the dotfile rule of shells and of
// both reference implementations: * and ** never match a name that starts
// with a dot; only a pattern segment that itself starts with a dot does
// (braces are expanded first, as in a shell, so {.env,x} names .env). And a
// trailing /** matches what is below a directory, never the path
// before it: a.py/** matches nothing when a.py is a file.
type matcher struct {
	pat  string
	kind int
	// alts holds the pattern's brace alternatives, split into segments;
	// a name pattern (no slash) is taken as **/pattern.
	alts [][]string
	// strict is set when a trailing ** makes the segment rules matter for
	// names without a dot segment too.
	strict bool
}

const (
	matchName     = iota // no slash: the file's base name
	matchRelative        // relative to the search directory
	matchAbsolute        // the whole path
)

func newMatcher(pattern string) (matcher, error) {
	if len(pattern) > maxPatternLen {
		return matcher{}, fmt.Errorf("the pattern is longer than %d bytes", maxPatternLen)
	}
	m := matcher{pat: pattern}
	switch {
	case !strings.Contains(pattern, "/"):
		m.kind = matchName
	case strings.HasPrefix(pattern, "/"):
		m.kind = matchAbsolute
	default:
		m.kind = matchRelative
		for strings.HasPrefix(m.pat, "./") {
			m.pat = strings.TrimLeft(m.pat[2:], "/")
		}
	}
	if !doublestar.ValidatePattern(m.pat) {
		return matcher{}, errors.New(patternProblem(pattern))
	}
	if n, _ := alternatives(m.pat, 0, false); n > maxAlternatives {
		return matcher{}, fmt.Errorf("its {a,b} groups make more than %d combinations; split it into several simpler patterns", maxAlternatives)
	}
	for _, alt := range expandBraces(m.pat) {
		segs := strings.Split(alt, "/")
		if m.kind == matchName {
			segs = []string{"**", alt}
		}
		// Consecutive ** segments mean what one does.
		segs = slices.CompactFunc(segs, func(a, b string) bool { return a == "**" && b == "**" })
		if len(segs) > 1 && segs[len(segs)-1] == "**" {
			m.strict = true
		}
		m.alts = append(m.alts, segs)
	}
	return m, nil
}

// expandBraces returns the patterns p's {a,b} groups stand for, escapes
// and character classes kept as they are.
func expandBraces(p string) []string {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			i = classEnd(p, i)
		case '{':
			parts, end := braceGroup(p, i)
			var out []string
			for _, suffix := range expandBraces(p[end+1:]) {
				for _, part := range parts {
					for _, e := range expandBraces(part) {
						out = append(out, p[:i]+e+suffix)
					}
				}
			}
			return out
		}
	}
	return []string{p}
}

// classEnd returns the index of the ] closing the class opened at p[i].
func classEnd(p string, i int) int {
	for i++; i < len(p) && p[i] != ']'; i++ {
		if p[i] == '\\' {
			i++
		}
	}
	return i
}

// braceGroup splits the group opened at p[i] into its alternatives and
// returns the index of its closing }.
func braceGroup(p string, i int) ([]string, int) {
	var parts []string
	depth, start := 0, i+1
	for j := i; j < len(p); j++ {
		switch p[j] {
		case '\\':
			j++
		case '[':
			j = classEnd(p, j)
		case '{':
			depth++
		case ',':
			if depth == 1 {
				parts = append(parts, p[start:j])
				start = j + 1
			}
		case '}':
			depth--
			if depth == 0 {
				return append(parts, p[start:j]), j
			}
		}
	}
	return append(parts, p[start:]), len(p) // unreachable for a valid pattern
}

// hidden reports whether a path segment is a dotfile name.
func hidden(seg string) bool { return strings.HasPrefix(seg, ".") }

// matchSegments reports whether the segments of a name match those of a
// pattern under the dotfile rule, by dynamic programming so that many **
// segments cannot make it slow.
func matchSegments(pat, name []string) bool {
	n, m := len(pat), len(name)
	// ok[i*(m+1)+j]: pat[i:] matches name[j:].
	ok := make([]bool, (n+1)*(m+1))
	at := func(i, j int) bool { return ok[i*(m+1)+j] }
	ok[n*(m+1)+m] = true
	// visibleFrom[j]: no segment of name[j:] is hidden.
	visibleFrom := make([]bool, m+1)
	visibleFrom[m] = true
	for j := m - 1; j >= 0; j-- {
		visibleFrom[j] = visibleFrom[j+1] && !hidden(name[j])
	}
	for i := n - 1; i >= 0; i-- {
		p := pat[i]
		for j := m; j >= 0; j-- {
			var v bool
			switch {
			case p == "**" && i == n-1 && i > 0:
				v = j < m && visibleFrom[j] // a trailing ** needs something below
			case p == "**":
				v = at(i+1, j) || j < m && !hidden(name[j]) && at(i, j+1)
			case j < m:
				v = at(i+1, j+1) && (!hidden(name[j]) || hidden(p)) && doublestar.MatchUnvalidated(p, name[j])
			}
			ok[i*(m+1)+j] = v
		}
	}
	return at(0, 0)
}

// alternatives counts the patterns a brace expansion of p[i:] would give
// (saturating above maxAlternatives). Inside a group it stops at the ',' or
// '}' that ends the current alternative and returns its index.
func alternatives(p string, i int, inGroup bool) (int, int) {
	total := 1
	for i < len(p) {
		switch p[i] {
		case '\\':
			i += 2
		case '[':
			for i++; i < len(p) && p[i] != ']'; i++ {
				if p[i] == '\\' {
					i++
				}
			}
			i++
		case '{':
			sum := 0
			for j := i + 1; ; {
				n, k := alternatives(p, j, true)
				sum = min(sum+n, maxAlternatives+1)
				if k >= len(p) || p[k] == '}' {
					i = k + 1
					break
				}
				j = k + 1
			}
			total = min(total*sum, maxAlternatives+1)
		case ',', '}':
			if inGroup {
				return total, i
			}
			i++
		default:
			i++
		}
	}
	return total, i
}

// match reports whether the file at full, found searching dir, matches.
func (m matcher) match(dir, full string) bool {
	var rel string
	switch {
	case dir == "/":
		rel = full[1:]
	case len(full) > len(dir):
		rel = full[len(dir)+1:]
	default:
		rel = full[strings.LastIndexByte(full, '/')+1:]
	}
	name := rel
	switch m.kind {
	case matchName:
		name = full[strings.LastIndexByte(full, '/')+1:]
	case matchAbsolute:
		name, rel = full, full
	}
	if !doublestar.MatchUnvalidated(m.pat, name) {
		return false // the segment rules only ever narrow doublestar's match
	}
	if !m.strict && !hidden(rel) && !strings.Contains(rel, "/.") {
		return true
	}
	segs := strings.Split(rel, "/")
	for _, alt := range m.alts {
		if matchSegments(alt, segs) {
			return true
		}
	}
	return false
}

// patternProblem says in plain words why doublestar rejects a pattern.
func patternProblem(p string) string {
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i++; i >= len(p) {
				return `it ends with a lone \ (a backslash makes the next character literal)`
			}
		case '[':
			j := i + 1
			if j < len(p) && (p[j] == '^' || p[j] == '!') {
				j++
			}
			if j < len(p) && p[j] == ']' {
				return "it has an empty character class []"
			}
			for ; j < len(p) && p[j] != ']'; j++ {
				if p[j] == '\\' {
					j++
				}
			}
			if j >= len(p) {
				return "a [ is never closed by ]"
			}
			i = j
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return "a } has no matching {"
			}
			depth--
		}
	}
	if depth > 0 {
		return "a { is never closed by }"
	}
	return "it is not a valid glob"
}

func runGlob(ctx context.Context, fs vfs.Backend, in globArgs, o Options) (tool.Result, error) {
	if in.Pattern == "" {
		return tool.Errorf("Error: pattern is empty. Give a glob such as *.md or src/**/*.go."), nil
	}
	dir, bad := cleanPath(in.Path, "/")
	if bad != nil {
		return *bad, nil
	}
	m, err := newMatcher(in.Pattern)
	if err != nil {
		return tool.Errorf("Error: invalid glob pattern %q: %v. Fix the pattern and try again.", in.Pattern, err), nil
	}
	res, err := search(ctx, fs, vfs.SearchRequest{Op: "glob", Pattern: in.Pattern, Path: dir, Limit: o.GlobMaxResults, Budget: o.answerBudget()})
	switch {
	case err != nil:
		return failed(ctx, "searching "+dir, err)
	case res.IsFile:
		return tool.Errorf("Error: %s is a file, but glob searches a directory. Give a directory as path, or use read_file to read the file.", dir), nil
	case res.Missing:
		return tool.Errorf("Error: directory %s does not exist. Use ls to find the right path.", dir), nil
	}
	out, total := res.Entries, res.Total
	if total == 0 {
		msg := fmt.Sprintf("No files match %q under %s.", in.Pattern, dir)
		if m.kind == matchRelative && !strings.HasPrefix(m.pat, "**") {
			msg += fmt.Sprintf(" A pattern with / is matched against paths relative to %s; start it with **/ to match at any depth.", dir)
		}
		return tool.Text(msg), nil
	}
	text := strings.Join(out, "\n")
	if total > len(out) {
		text += fmt.Sprintf("\n\n[Showing the first %d of %d matching files. Narrow the pattern or the path to see the rest.]", len(out), total)
	}
	return tool.Text(text), nil
}

// search runs req in one call of fs when it can (vfs.Search), and file by
// file otherwise.
func search(ctx context.Context, fs vfs.Backend, req vfs.SearchRequest) (vfs.SearchResult, error) {
	res, ok, err := vfs.Search(vfs.WithFileSearch(ctx, Search), fs, req)
	if !ok {
		res, err = Search(ctx, fs, req)
	}
	if err == nil && res.Denied != nil {
		err = res.Denied
	}
	return res, err
}

// Search runs a search of grep or glob on b file by file, as the tools do:
// it is what a backend that implements vfs.Searcher runs where its files
// are. The request's rules apply as the wrappers that added them would.
// A search refused by a rule is answered with Denied set. A part of a
// search a vfs.Composite merges (Part) searches b as mounted at Mount,
// in path order, without the files Exclude leaves out.
func Search(ctx context.Context, b vfs.Backend, req vfs.SearchRequest) (vfs.SearchResult, error) {
	b, err := mountFor(b, req)
	if err != nil {
		return vfs.SearchResult{}, err
	}
	var res vfs.SearchResult
	switch req.Op {
	case "glob":
		res, err = globFiles(ctx, b, req)
	case "grep":
		res, err = grepFiles(ctx, b, req)
	default:
		return vfs.SearchResult{}, fmt.Errorf("unknown search %q: give grep or glob", req.Op)
	}
	var denied *vfs.DeniedError
	if errors.As(err, &denied) && ctx.Err() == nil {
		res, err = vfs.SearchResult{Denied: denied}, nil
	}
	res.Part = req.Part
	return res, err
}

// entries keeps a search's matches within its caps.
type entries struct {
	res    *vfs.SearchResult
	limit  int
	budget int
	chars  int
	full   bool
	// part records each entry's file (see addOf); last is the file of the
	// entry before.
	part bool
	last string
}

func (e *entries) add(s string) {
	if e.res.Total < e.limit && !e.full {
		if e.chars+len(s)+1 > e.budget && len(e.res.Entries) > 0 {
			e.full = true
		} else {
			e.res.Entries = append(e.res.Entries, s)
			e.chars += len(s) + 1
		}
	}
	e.res.Total++
}

func globFiles(ctx context.Context, fs vfs.Backend, req vfs.SearchRequest) (vfs.SearchResult, error) {
	var res vfs.SearchResult
	m, err := newMatcher(req.Pattern)
	if err != nil {
		return res, err
	}
	dir := req.Path
	e, err := fs.Stat(ctx, dir)
	switch {
	case err == nil && e.IsDir:
	case err == nil:
		res.IsFile = true
		return res, nil
	case errors.Is(err, vfs.ErrNotFound):
		if dir != "/" {
			res.Missing = true
			return res, nil
		}
	default:
		return res, err
	}
	add := entries{res: &res, limit: req.Limit, budget: req.Budget, part: req.Part}
	for e, err := range walkFor(ctx, fs, dir, req) {
		if err != nil {
			return vfs.SearchResult{}, err
		}
		if m.match(dir, e.Path) {
			add.addOf(e.Path, e.Path)
		}
	}
	return res, nil
}

type grepArgs struct {
	Pattern    string  `json:"pattern"`
	Path       string  `json:"path"`
	Glob       *string `json:"glob"`
	OutputMode string  `json:"output_mode"`
	MaxCount   *int    `json:"max_count"`
}

const (
	modeFiles   = "files_with_matches"
	modeContent = "content"
	modeCount   = "count"
)

func grepTool(o Options) tool.Tool {
	schema := fmt.Sprintf(`{"type":"object","properties":{"pattern":{"type":"string","description":"Text to find."},"path":{"type":"string","description":"File or directory to search.","default":"/"},"glob":{"type":"string","description":"Only search files matching this glob; without / it matches file names, as in the glob tool."},"output_mode":{"type":"string","enum":["files_with_matches","content","count"],"description":"files_with_matches: matching paths. content: path:line: text per matching line, cut at %d characters. count: path: number of matching lines.","default":"files_with_matches"},"max_count":{"type":"integer","description":"Max entries returned (paths or lines); a notice says if there are more.","default":%d}},"required":["pattern"],"additionalProperties":false}`,
		o.MaxLineChars, o.GrepMaxResults)
	return define("grep",
		"Search file contents for literal, case-sensitive text (not a regex). Binary files are skipped.",
		schema,
		func(ctx context.Context, fs vfs.Backend, in grepArgs) (tool.Result, error) {
			return runGrep(ctx, fs, in, o)
		})
}

func runGrep(ctx context.Context, fs vfs.Backend, in grepArgs, o Options) (tool.Result, error) {
	if in.Pattern == "" {
		return tool.Errorf("Error: pattern is empty. Give the text to search for."), nil
	}
	base, bad := cleanPath(in.Path, "/")
	if bad != nil {
		return *bad, nil
	}
	mode := in.OutputMode
	if mode == "" {
		mode = modeFiles
	}
	if mode != modeFiles && mode != modeContent && mode != modeCount {
		return tool.Errorf("Error: output_mode must be files_with_matches, content or count; got %q.", mode), nil
	}
	limit := o.GrepMaxResults
	if in.MaxCount != nil {
		if *in.MaxCount <= 0 {
			return tool.Errorf("Error: max_count must be 1 or more; got %d. Leave it out for up to %d entries.", *in.MaxCount, o.GrepMaxResults), nil
		}
		limit = *in.MaxCount
	}
	var filter *matcher
	if in.Glob != nil && *in.Glob != "" {
		m, err := newMatcher(*in.Glob)
		if err != nil {
			return tool.Errorf("Error: invalid glob %q: %v. Fix the glob and try again.", *in.Glob, err), nil
		}
		filter = &m
	}

	req := vfs.SearchRequest{Op: "grep", Pattern: in.Pattern, Path: base, Mode: mode, Limit: limit, Budget: o.answerBudget(),
		MaxLineChars: o.MaxLineChars, MaxFileBytes: o.GrepMaxFileBytes}
	if filter != nil {
		req.Glob = *in.Glob
	}
	res, err := search(ctx, fs, req)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return tool.Result{}, context.Cause(ctx)
		}
		return failed(ctx, "searching "+base, err)
	case res.Missing:
		return tool.Errorf("Error: %s does not exist. Use ls or glob to find the right path.", base), nil
	}
	out, total := res.Entries, res.Total
	skipped := make([]skip, len(res.Skipped))
	for i, s := range res.Skipped {
		skipped[i] = skip{s.Path, s.Why}
	}
	skippedText := skipNotice(skipped, max(res.SkippedTotal, len(skipped)))
	if total == 0 {
		msg := fmt.Sprintf("No matches for %q in %s.", in.Pattern, base)
		if skippedText != "" {
			msg += " (" + skippedText + ")"
		}
		if looksLikeRegex(in.Pattern) {
			msg += " Note: grep matches the pattern as literal text, not as a regular expression, so characters such as . * + | ( [ ^ $ \\ match only themselves. Search for a plain piece of the text instead."
		}
		return tool.Text(msg), nil
	}
	text := strings.Join(out, "\n")
	if total > len(out) {
		unit := map[string]string{modeFiles: "matching files", modeCount: "matching files", modeContent: "matching lines"}[mode]
		text += fmt.Sprintf("\n\n[Showing the first %d of %d %s. Narrow the search with path or glob, or raise max_count.]", len(out), total, unit)
	}
	if skippedText != "" {
		text += "\n\n[" + skippedText + "]"
	}
	return tool.Text(text), nil
}

func grepFiles(ctx context.Context, fs vfs.Backend, req vfs.SearchRequest) (vfs.SearchResult, error) {
	var res vfs.SearchResult
	var filter *matcher
	if req.Glob != "" {
		m, err := newMatcher(req.Glob)
		if err != nil {
			return res, err
		}
		filter = &m
	}
	base := req.Path
	// The files to search: base itself if it is a file, else all below it.
	dir := base
	var paths []string
	switch e, err := fs.Stat(ctx, base); {
	case err == nil && !e.IsDir:
		dir = vfs.Parent(base)
		if !req.Part || !vfs.Excluded(base, req.Exclude) {
			paths = []string{base}
		}
	case err == nil || errors.Is(err, vfs.ErrNotFound) && base == "/":
		for e, err := range walkFor(ctx, fs, base, req) {
			if err != nil {
				return vfs.SearchResult{}, err
			}
			paths = append(paths, e.Path)
		}
	case errors.Is(err, vfs.ErrNotFound):
		res.Missing = true
		return res, nil
	default:
		return vfs.SearchResult{}, err
	}

	acc := entries{res: &res, limit: req.Limit, budget: req.Budget, part: req.Part}
	for _, p := range paths {
		add := func(s string) { acc.addOf(p, s) }
		if filter != nil && !filter.match(dir, p) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return vfs.SearchResult{}, context.Cause(ctx)
		}
		content, why, err := searchable(ctx, fs, p, req.MaxFileBytes)
		if err != nil {
			if errors.Is(err, vfs.ErrNotFound) || errors.Is(err, vfs.ErrIsDir) {
				continue
			}
			if ctx.Err() != nil {
				return vfs.SearchResult{}, context.Cause(ctx)
			}
			why = unreadable(err)
		}
		if why != "" {
			// Only those the answer names travel: a tree of many
			// binary files would make the result too large to send.
			if res.SkippedTotal++; len(res.Skipped) < maxSkipsNamed {
				res.Skipped = append(res.Skipped, vfs.SearchSkip{Path: p, Why: why})
			}
			continue
		}
		switch req.Mode {
		case modeFiles:
			if strings.Contains(content, req.Pattern) {
				add(p)
			}
		case modeCount:
			if n := len(matchingLines(content, req.Pattern)); n > 0 {
				add(fmt.Sprintf("%s: %d", p, n))
			}
		default:
			for _, l := range matchingLines(content, req.Pattern) {
				line := truncateRunes(strings.TrimSuffix(l.text, "\r"), req.MaxLineChars)
				add(fmt.Sprintf("%s:%d: %s", p, l.n, line))
			}
		}
	}
	return res, nil
}

// skip is a file grep did not search, and why.
type skip struct{ path, why string }

// maxSkipsNamed is how many skipped files grep names; the rest are counted.
const maxSkipsNamed = 5

// skipNotice says which files grep skipped and why: at most maxSkipsNamed
// by name, then how many more.
func skipNotice(skipped []skip, total int) string {
	if total == 0 {
		return ""
	}
	named := make([]string, 0, maxSkipsNamed)
	for _, s := range skipped[:min(len(skipped), maxSkipsNamed)] {
		named = append(named, fmt.Sprintf("%s (%s)", s.path, s.why))
	}
	text := fmt.Sprintf("Skipped %s: %s", plural(total, "file"), strings.Join(named, ", "))
	if more := total - len(named); more > 0 {
		text += fmt.Sprintf(", and %d more", more)
	}
	return text + "."
}

// searchable returns a file's text for grep, or why it is not searched:
// binary (told from its first bytes, before the rest is loaded) or larger
// than max bytes. Files already in memory are searched whatever their size.
func searchable(ctx context.Context, fs vfs.Backend, p string, max int64) (string, string, error) {
	rc, e, err := vfs.Open(ctx, fs, p)
	if err != nil {
		return "", "", err
	}
	defer rc.Close()
	if mem, ok := rc.(interface{ Content() string }); ok {
		content := mem.Content()
		if kind := binaryKind([]byte(content[:min(len(content), sniffLen)])); kind != "" || strings.IndexByte(content, 0) >= 0 {
			return "", binaryWhy(kind, e.Size), nil
		}
		return content, "", nil
	}
	br := bufio.NewReaderSize(rc, sniffLen)
	head, err := br.Peek(sniffLen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return "", "", err
	}
	if kind := binaryKind(head); kind != "" {
		return "", binaryWhy(kind, e.Size), nil
	}
	if e.Size > max {
		return "", fmt.Sprintf("too large: %s, grep searches files up to %s", safefile.Size(e.Size), safefile.Size(max)), nil
	}
	var b strings.Builder
	n, err := io.Copy(&b, io.LimitReader(br, max+1))
	switch {
	case err != nil:
		return "", "", err
	case n > max:
		return "", fmt.Sprintf("too large: over %s, grep searches files up to %s", safefile.Size(max), safefile.Size(max)), nil
	case strings.IndexByte(b.String(), 0) >= 0:
		return "", binaryWhy("", n), nil
	}
	return b.String(), "", nil
}

func binaryWhy(kind string, size int64) string {
	if kind == "" || kind == "binary data" {
		return "binary, " + safefile.Size(size)
	}
	return fmt.Sprintf("binary, %s, %s", kind, safefile.Size(size))
}

// unreadable says in a few words why a file could not be read.
func unreadable(err error) string {
	var denied *vfs.DeniedError
	if errors.As(err, &denied) {
		return denied.Reason
	}
	if errors.Is(err, vfs.ErrPermission) {
		return "permission denied"
	}
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return "unreadable: " + err.Error()
}

type lineMatch struct {
	n    int // 1-based line number
	text string
}

// matchingLines returns the lines on which an occurrence of pat starts.
func matchingLines(content, pat string) []lineMatch {
	var out []lineMatch
	line, counted := 1, 0
	for pos := 0; pos <= len(content); {
		i := strings.Index(content[pos:], pat)
		if i < 0 {
			break
		}
		start := pos + i
		ls := strings.LastIndexByte(content[:start], '\n') + 1
		line += strings.Count(content[counted:ls], "\n")
		counted = ls
		le := strings.IndexByte(content[start:], '\n')
		if le < 0 {
			le = len(content)
		} else {
			le += start
		}
		out = append(out, lineMatch{line, content[ls:le]})
		pos = le + 1
	}
	return out
}

// looksLikeRegex guesses whether a pattern was written as a regular
// expression.
func looksLikeRegex(p string) bool {
	for _, s := range []string{".*", ".+", ".?", `\d`, `\w`, `\s`, `\b`, `\.`, `\(`, `\[`, "|", "+", "("} {
		if strings.Contains(p, s) {
			return true
		}
	}
	if strings.HasPrefix(p, "^") || strings.HasSuffix(p, "$") {
		return true
	}
	if i := strings.IndexByte(p, '['); i >= 0 && strings.IndexByte(p[i:], ']') > 0 {
		return true
	}
	return false
}
