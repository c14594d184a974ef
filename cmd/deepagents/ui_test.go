package main

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// deepagents serve mounts the web UI: its page answers at "/".
func TestServeMountsUI(t *testing.T) {
	if serveUI == nil {
		t.Fatal("serveUI is not set: deepagents serve would serve no web UI")
	}
	rec := httptest.NewRecorder()
	serveUI.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `<script src="app.js" defer></script>`) {
		t.Fatalf("GET / = %d, body %.200q; want the UI's page", rec.Code, rec.Body.String())
	}
}
