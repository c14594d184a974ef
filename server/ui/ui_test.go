package ui_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/server/ui"
)

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestHandlerRoutes(t *testing.T) {
	h := ui.Handler()
	tests := []struct {
		method, path string
		status       int
		contentType  string // prefix
		body         string // a part of the body
	}{
		{"GET", "/", 200, "text/html", `<script src="app.js" defer></script>`},
		{"GET", "/app.js", 200, "text/javascript", "function readSSE("},
		{"GET", "/app.css", 200, "text/css", "#layout"},
		{"HEAD", "/", 200, "text/html", ""},
		// A path that is no asset is a 404, not the page (the app links
		// to threads by fragment: "/#id").
		{"GET", "/some/page", 404, "text/plain", "404 page not found"},
		{"GET", "/nope", 404, "text/plain", "404 page not found"},
		{"GET", "/missing.js", 404, "text/plain", "404 page not found"},
		{"GET", "/../../etc/passwd.txt", 404, "text/plain", ""},
		{"POST", "/", 405, "text/plain", "only answers GET and HEAD"},
		{"DELETE", "/app.js", 405, "text/plain", "only answers GET and HEAD"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := get(t, h, tc.method, tc.path)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %q", rec.Code, tc.status, rec.Body.String())
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, tc.contentType) {
				t.Errorf("Content-Type %q, want %s…", ct, tc.contentType)
			}
			if !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("body lacks %q:\n%.300s", tc.body, rec.Body.String())
			}
		})
	}
}

// The page may load only its own files: the policy forbids inline scripts
// and any other origin, and no page may frame it.
func TestHandlerSecurityHeaders(t *testing.T) {
	rec := get(t, ui.Handler(), "GET", "/")
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("Content-Security-Policy %q allows inline code", csp)
	}
	if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q, want nosniff", got)
	}
	if got := rec.Header().Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("X-Frame-Options %q, want DENY", got)
	}
}

// The assets are hand-written and self-contained: nothing is loaded from
// another origin, and all of them together stay under 1 MB gzipped.
func TestAssetsSelfContainedAndSmall(t *testing.T) {
	var total, raw int
	err := fs.WalkDir(ui.Assets(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(ui.Assets(), path)
		if err != nil {
			return err
		}
		for _, bad := range []string{"http://", "https://", "//cdn", "<script>", "import("} {
			if path != "app.js" && bytes.Contains(b, []byte(bad)) {
				t.Errorf("%s contains %q: assets must not load from elsewhere or inline scripts", path, bad)
			}
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if _, err := io.Copy(zw, bytes.NewReader(b)); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		raw += len(b)
		total += buf.Len()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if raw == 0 {
		t.Fatal("no assets embedded")
	}
	if total > 1<<20 {
		t.Errorf("assets are %d bytes gzipped, over the 1 MB budget", total)
	}
	t.Logf("assets: %d bytes, %d gzipped", raw, total)
	// app.js may name http(s) only to check link targets in Markdown.
	js, _ := fs.ReadFile(ui.Assets(), "app.js")
	for _, line := range strings.Split(string(js), "\n") {
		if strings.Contains(line, "fetch(") && strings.Contains(line, "http") {
			t.Errorf("app.js fetches an absolute URL: %s", strings.TrimSpace(line))
		}
	}
}
