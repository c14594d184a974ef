package fakewire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestSSEAndLog(t *testing.T) {
	var log Log[string]
	srv := Start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Add(r.URL.Path)
		sse := StartSSE(w, http.Header{"X-Id": {"7"}}, "\r\n")
		_ = sse.Event("ping", []byte(`{}`))
		_ = sse.JSON("", map[string]int{"n": 1})
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/a")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "event: ping\r\ndata: {}\r\n\r\ndata: {\"n\":1}\r\n\r\n"; string(body) != want {
		t.Errorf("body %q, want %q", body, want)
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Id") != "7" {
		t.Errorf("headers %v", resp.Header)
	}
	if last, ok := log.Last(); !ok || last != "/a" || log.Count() != 1 || len(log.All()) != 1 {
		t.Errorf("log %v", log.All())
	}
}

func TestWriteJSONKeepsHeaders(t *testing.T) {
	srv := Start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, 429, http.Header{"Retry-After": {"30"}}, map[string]string{"error": "slow down"})
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "30" || strings.TrimSpace(string(body)) != `{"error":"slow down"}` {
		t.Errorf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// Close releases a handler that hangs (httptest's Close would otherwise
// wait for it forever), even while its client is still waiting.
func TestCloseReleasesHang(t *testing.T) {
	entered, left := make(chan struct{}), make(chan struct{})
	var srv *Server
	srv = Start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		Hang(r, srv.Done())
		close(left)
	}))
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-entered
	srv.Close()
	select {
	case <-left:
	default:
		t.Error("Close returned while the handler still hung")
	}
	<-errc
}

// Silent accepts a connection and never answers: a client with a deadline
// times out.
func TestSilent(t *testing.T) {
	url := Silent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	_, err := http.DefaultClient.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
}
