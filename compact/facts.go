package compact

import (
	"regexp"
	"strings"
)

// maxFacts caps how many facts one message contributes.
const maxFacts = 50

var (
	urlRe = regexp.MustCompile(`https?://[^\s<>"'` + "`" + `)\]]+`)
	// A path has a slash between names: src/a.go, /etc/hosts, ./x.
	pathRe = regexp.MustCompile(`(?:^|[\s(\["'` + "`" + `=:])((?:\.{0,2}/)?(?:[\w.\-]+/)+[\w.\-]+)`)
	// A file or dotted name: main.go, config.v2.json.
	nameRe = regexp.MustCompile(`\b[A-Za-z_][\w\-]*(?:\.[\w\-]+)*\.[A-Za-z]\w*\b`)
	// An identifier in capitals: MAX_RETRIES, HTTP2.
	capsRe = regexp.MustCompile(`\b[A-Z0-9_]{4,}\b`)
	// A number with a unit: 30 s, 2.5GB, 80%, 512 tokens.
	unitRe   = regexp.MustCompile(`(?i)(?:^|[^\w.])(\d+(?:\.\d+)?\s?(?:%|(?:ms|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?|days?|weeks?|kb|mb|gb|tb|kib|mib|gib|bytes?|tokens?|px|usd|eur|k|m)\b))`)
	quotedRe = regexp.MustCompile("\"([^\"\\n]{1,80})\"|`([^`\\n]{1,80})`")
)

// Facts returns the details of text a summary must keep as written: URLs,
// paths, file names, identifiers in capitals, numbers with units and short
// quoted strings, in order of first appearance, without repeats.
func Facts(text string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		s = strings.TrimSpace(strings.TrimRight(s, ".,;:!?"))
		if len(s) < 3 || seen[s] || len(out) >= maxFacts {
			return
		}
		seen[s] = true
		out = append(out, s)
	}
	urls := urlRe.FindAllString(text, -1)
	for _, u := range urls {
		add(u)
	}
	// The rest is looked for in the text without its URLs, so that a URL's
	// host and path do not come back as names.
	rest := urlRe.ReplaceAllString(text, " ")
	for _, m := range pathRe.FindAllStringSubmatch(rest, -1) {
		add(m[1])
	}
	noPaths := pathRe.ReplaceAllString(rest, " ")
	for _, m := range quotedRe.FindAllStringSubmatch(text, -1) {
		add(m[1] + m[2])
	}
	for _, n := range nameRe.FindAllString(noPaths, -1) {
		if len(n) >= 4 { // not e.g or i.e
			add(n)
		}
	}
	for _, c := range capsRe.FindAllString(noPaths, -1) {
		if strings.ContainsAny(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			add(c)
		}
	}
	for _, m := range unitRe.FindAllStringSubmatch(noPaths, -1) {
		add(m[1])
	}
	return out
}
