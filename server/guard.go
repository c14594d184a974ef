package server

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// DefaultMaxStreams is how many event streams a server keeps open at once
// when Config.MaxStreams is 0.
const DefaultMaxStreams = 1024

// Check refuses a list that would let any web page drive the server:
// every origin ("*") when the server has no token, the "null" origin (which
// sandboxed frames and local files send, so any page can), and a value
// that is not an origin.
func (c CORS) Check(hasToken bool) error {
	for _, o := range c.AllowOrigins {
		switch {
		case o == "*" && !hasToken:
			return errors.New(`CORS origin "*" without a token would let every web page you visit call the API; list the origins, or set a token`)
		case strings.EqualFold(o, "null"):
			return errors.New(`CORS origin "null" is what sandboxed frames and local files send, so any page can claim it; list real origins`)
		case o != "*" && !validOrigin(o):
			return fmt.Errorf("CORS origin %q is not an origin (scheme://host[:port], no path)", o)
		}
	}
	return nil
}

// validOrigin says whether o is spelled as browsers send Origin.
func validOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.Path == "" && u.RawQuery == "" && u.Fragment == "" && u.User == nil
}

// guard refuses, before anything runs, the requests a web page the user
// happens to visit could send to a server on their machine: one addressed
// to a name that is not loopback when the server has no token (a page of
// another site that had its name resolve to 127.0.0.1: DNS rebinding), one
// from an origin not allowed (Origin is set by browsers on every
// cross-origin request, and on same-origin ones that are not GET or HEAD),
// and a body that is not JSON (text/plain, form and beacon posts are the
// ones a page may send without asking the server first). It answers CORS
// preflights of allowed origins. True means the request was answered.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.Token == "" && !s.hostAllowed(r.Host) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("the request is addressed to %q, which is not this machine's loopback name or address; "+
			"a server without a token answers only requests to localhost, 127.0.0.1 or [::1] (so that a web page cannot reach it under its own name)", r.Host))
		return true
	}
	origin, present := r.Header["Origin"]
	listed := false
	if present {
		o := ""
		if len(origin) > 0 {
			o = origin[0]
		}
		var same bool
		same, listed = s.sameOrigin(o, r), s.originListed(o)
		if !same && !listed {
			writeError(w, http.StatusForbidden, fmt.Sprintf("requests from web pages of origin %q are refused; start the server with that origin in its CORS list (--cors) to allow them", o))
			return true
		}
	}
	if !present && crossSiteSubresource(r) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("a page of another site asked for this (Sec-Fetch-Site: %s, as an %s); "+
			"the server answers web pages only of its own origin or those listed with --cors", r.Header.Get("Sec-Fetch-Site"), fetchDest(r)))
		return true
	}
	if len(s.cfg.CORS.AllowOrigins) > 0 {
		w.Header().Add("Vary", "Origin") // the answer depends on it
	}
	if listed {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin[0])
		h.Set("Access-Control-Expose-Headers", "Content-Location, X-Pagination-Total, Location")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID, X-Api-Key")
			h.Set("Access-Control-Max-Age", "600")
			if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
				// The origin is one the user listed: a page there may reach
				// this server on their own machine or network.
				h.Set("Access-Control-Allow-Private-Network", "true")
			}
			w.WriteHeader(http.StatusNoContent)
			return true
		}
	}
	if err := jsonBody(r); err != nil {
		s.fail(w, err)
		return true
	}
	return false
}

// crossSiteSubresource says whether r is a request a page of another site
// made without an Origin header, as browsers make an image, a script, a
// style sheet or a prefetch (a no-cors GET): its answer is not readable to
// the page, but it still holds a stream or tells the page by its timing
// and its load or error event what the server has. A person following a
// link (a navigation) is not such a request, nor is anything a client
// other than a browser sends (no Sec-Fetch-Site).
func crossSiteSubresource(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return r.Header.Get("Sec-Fetch-Mode") != "navigate"
	}
	return false
}

// fetchDest names what the browser said the request is for.
func fetchDest(r *http.Request) string {
	if d := r.Header.Get("Sec-Fetch-Dest"); d != "" && d != "empty" {
		return d
	}
	return "embedded request"
}

// hostAllowed says whether a request's Host names this machine's loopback
// interface (localhost, 127.0.0.0/8, ::1) or one of Config.Hosts.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, h := range s.cfg.Hosts {
		if h == "*" || strings.EqualFold(h, host) || strings.EqualFold(h, hostport) {
			return true
		}
	}
	return false
}

// sameOrigin says whether origin is the server's own, as the web UI served
// from it sends: the same host and port the request is addressed to.
func (s *Server) sameOrigin(origin string, r *http.Request) bool {
	if !validOrigin(origin) {
		return false
	}
	u, _ := url.Parse(origin)
	return strings.EqualFold(u.Host, r.Host)
}

// originListed says whether origin is in Config.CORS (any real origin for
// "*"; never "null").
func (s *Server) originListed(origin string) bool {
	if !validOrigin(origin) {
		return false
	}
	for _, o := range s.cfg.CORS.AllowOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

// jsonBody refuses a request body that is not JSON, and a Content-Type
// other than JSON on a request that changes something: web pages may send
// text/plain, form and multipart bodies to any server without asking it
// first, never application/json. A request without body and without
// Content-Type (a GET, a DELETE, a cancel) passes.
func jsonBody(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	hasBody := r.ContentLength != 0
	if !hasBody && (ct == "" || r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions) {
		return nil
	}
	if ct == "" {
		return errf(http.StatusUnsupportedMediaType, "the request has a body but no Content-Type; send it as JSON with Content-Type: application/json")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return errf(http.StatusUnsupportedMediaType, "Content-Type %q is not taken; send JSON with Content-Type: application/json", ct)
	}
	return nil
}

// streamSlot takes one of the server's stream slots, answering 429 when
// all are taken; release gives it back.
func (s *Server) streamSlot(w http.ResponseWriter) (release func(), ok bool) {
	max := s.cfg.MaxStreams
	if max == 0 {
		max = DefaultMaxStreams
	}
	if max < 0 {
		return func() {}, true
	}
	if n := s.streams.Add(1); n > int64(max) {
		s.streams.Add(-1)
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("the server has %d event streams open, as many as it keeps at once; close one or try again later", max))
		return nil, false
	}
	return func() { s.streams.Add(-1) }, true
}

// route is one API route: its method and path segments ("{name}" for a
// wildcard).
type route struct {
	method string
	segs   []string
}

func parseRoute(pattern string) route {
	method, path, _ := strings.Cut(pattern, " ")
	return route{method: method, segs: strings.Split(strings.Trim(path, "/"), "/")}
}

func wildcard(seg string) bool { return strings.HasPrefix(seg, "{") }

func (rt route) matches(segs []string) bool {
	if len(segs) != len(rt.segs) {
		return false
	}
	for i, s := range rt.segs {
		if wildcard(s) && segs[i] == "" || !wildcard(s) && s != segs[i] {
			return false // a wildcard takes no empty segment, as the mux's
		}
	}
	return true
}

// allowed lists the methods the API takes on path, in order, with HEAD
// after GET. A route whose wildcard meets a segment another route on the
// same path names literally does not count: in /threads/x/runs/stream,
// "stream" names an endpoint (POST), not a run to GET.
func (s *Server) allowed(path string) []string {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var match []route
	for _, rt := range s.table {
		if rt.matches(segs) {
			match = append(match, rt)
		}
	}
	var out []string
	for _, rt := range match {
		if s.shadowed(rt, match) {
			continue
		}
		if !slices.Contains(out, rt.method) {
			out = append(out, rt.method)
		}
		if rt.method == http.MethodGet && !slices.Contains(out, http.MethodHead) {
			out = append(out, http.MethodHead)
		}
	}
	slices.Sort(out)
	return out
}

// generated are the wildcards whose values only the server makes (run ids
// are UUIDs it gives): such a segment never takes a word another route
// names. Thread ids and assistant names are the clients', so /threads/search
// may be a thread.
var generated = []string{"{run}"}

// shadowed says whether another matching route names literally a segment
// rt takes as a generated id.
func (s *Server) shadowed(rt route, match []route) bool {
	for _, o := range match {
		for i, seg := range rt.segs {
			if slices.Contains(generated, seg) && !wildcard(o.segs[i]) {
				return true
			}
		}
	}
	return false
}

// serves says whether the API serves method on path (HEAD where GET).
func (s *Server) serves(method, path string) bool {
	return slices.Contains(s.allowed(path), method)
}
