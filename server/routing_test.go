package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/server/ui"
)

// TestRoutingErrorsJSON: a path no route serves is a 404 and a method a
// route does not take a 405 (with Allow), both as JSON {"detail"}, with
// or without the web UI mounted; the UI answers only its own paths.
func TestRoutingErrorsJSON(t *testing.T) {
	check := func(h *harness, method, path string, status int, says string) http.Header {
		t.Helper()
		resp, b := h.do(method, path, nil)
		var body ErrorBody
		if resp.StatusCode != status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			json.Unmarshal(b, &body) != nil || !strings.Contains(body.Detail, says) {
			t.Errorf("%s %s: %d %s %q; want %d, JSON detail saying %q", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), b, status, says)
		}
		return resp.Header
	}
	for _, withUI := range []bool{false, true} {
		cfg := Config{Token: "s3cret"}
		if withUI {
			cfg.UI = ui.Handler()
		}
		h := newHarness(t, cfg)
		check(h, "GET", "/nope", 404, "no route for GET /nope")
		check(h, "GET", "/threads/x/nope", 404, "no route")
		if allow := check(h, "PUT", "/threads", 405, "PUT is not allowed on /threads").Get("Allow"); !strings.Contains(allow, "POST") {
			t.Errorf("405 Allow %q; want POST", allow)
		}
		check(h, "DELETE", "/ok", 405, "allowed: GET")
		if !withUI {
			continue
		}
		// The UI's own paths load without a token; its errors are JSON.
		h.token = ""
		for _, p := range []string{"/", "/app.js"} {
			if resp, _ := h.do("GET", p, nil); resp.StatusCode != 200 || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("GET %s with the UI: %d %s; want the UI's file", p, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		}
		check(h, "GET", "/nope", 404, "no route for GET /nope")
		check(h, "GET", "/missing.js", 404, "no route")
		check(h, "POST", "/", 405, "allowed: GET, HEAD")
		check(h, "GET", "/x/../", 400, "Bad Request")
		check(h, "GET", "/threads", 401, "token")
	}
}

// TestBearerSchemeAnyCase: the Authorization scheme is case-insensitive
// (RFC 7235): "bearer" and "BEARER" are taken, other schemes and wrong
// tokens are not.
func TestBearerSchemeAnyCase(t *testing.T) {
	h := newHarness(t, Config{Token: "s3cret"})
	h.token = ""
	for hdr, status := range map[string]int{
		"Bearer s3cret":  200,
		"bearer s3cret":  200,
		"BEARER s3cret":  200,
		"bEaReR  s3cret": 200,
		"bearer wrong":   401,
		"Basic s3cret":   401,
		"bearers3cret":   401,
		"s3cret":         401,
	} {
		if resp, b := h.do("GET", "/info", nil, "Authorization", hdr); resp.StatusCode != status {
			t.Errorf("Authorization %q: %d %s; want %d", hdr, resp.StatusCode, b, status)
		}
	}
}
