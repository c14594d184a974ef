package fstools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

// remoteFS stands for a directory on another machine: it searches there in
// one call (its request and answer cross as JSON), and counts every other
// call, which a search must not make.
type remoteFS struct {
	inner    vfs.Backend
	searches atomic.Int32
	calls    atomic.Int32
}

func (r *remoteFS) Search(ctx context.Context, req vfs.SearchRequest) (vfs.SearchResult, bool, error) {
	r.searches.Add(1)
	var wire vfs.SearchRequest
	roundTrip(&req, &wire)
	res, err := Search(ctx, r.inner, wire)
	var out vfs.SearchResult
	roundTrip(&res, &out)
	return out, true, err
}

func (r *remoteFS) ReadPage(ctx context.Context, req vfs.PageRequest) (vfs.PageResult, bool, error) {
	r.searches.Add(1)
	var wire vfs.PageRequest
	roundTrip(&req, &wire)
	res, err := ReadPage(ctx, r.inner, wire)
	var out vfs.PageResult
	roundTrip(&res, &out)
	return out, true, err
}

func roundTrip(in, out any) {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
}

func (r *remoteFS) Stat(ctx context.Context, p string) (vfs.Entry, error) {
	r.calls.Add(1)
	return r.inner.Stat(ctx, p)
}
func (r *remoteFS) Read(ctx context.Context, p string) (string, error) {
	r.calls.Add(1)
	return r.inner.Read(ctx, p)
}
func (r *remoteFS) Open(ctx context.Context, p string) (io.ReadCloser, vfs.Entry, error) {
	r.calls.Add(1)
	return vfs.Open(ctx, r.inner, p)
}
func (r *remoteFS) Write(ctx context.Context, p, c string) error {
	r.calls.Add(1)
	return r.inner.Write(ctx, p, c)
}
func (r *remoteFS) Delete(ctx context.Context, p string) (int, error) {
	r.calls.Add(1)
	return r.inner.Delete(ctx, p)
}
func (r *remoteFS) List(ctx context.Context, p string) ([]vfs.Entry, error) {
	r.calls.Add(1)
	return r.inner.List(ctx, p)
}
func (r *remoteFS) Walk(ctx context.Context, p string) iter.Seq2[vfs.Entry, error] {
	r.calls.Add(1)
	return r.inner.Walk(ctx, p)
}

// A search or a paged read through a backend that does it in one call
// answers exactly as the same done file by file, under the same rules, and
// makes no other call of the backend.
func TestSearcherAnswersAsFileByFile(t *testing.T) {
	files := map[string]string{
		"/README.md":          "needle in the readme\nno\nneedle again",
		"/src/a.go":           "package a\n// needle\n",
		"/src/b.go":           "package b\n",
		"/src/sub/c.go":       "needle needle\nneedle\n",
		"/src/.hidden/d.go":   "needle",
		"/secret/key.txt":     "needle: hunter2",
		"/secret/pub/ok.txt":  "needle public",
		"/docs/big.log":       strings.Repeat("needle\n", 400),
		"/docs/bin.dat":       "needle\x00",
		"/docs/private.md":    "needle private",
		"/.env":               "NEEDLE=needle",
		"/src/sub/deep/e.txt": "e needle",
		"/empty.txt":          "",
		"/long.txt":           strings.Repeat("a line of text\n", 3000) + strings.Repeat("w", 5000),
		"/a.png":              "\x89PNG\r\n\x1a\n\x00\x00",
	}
	rules := []string{"allow read /secret/pub/**", "deny read /secret/**", "deny read /docs/private.md"}
	denyAll := []string{"deny read /src/**"}
	cases := []struct {
		tool, args string
		rules      []string
	}{
		{"grep", `{"pattern":"needle"}`, nil},
		{"grep", `{"pattern":"needle"}`, rules},
		{"grep", `{"pattern":"needle","output_mode":"content"}`, rules},
		{"grep", `{"pattern":"needle","output_mode":"count"}`, rules},
		{"grep", `{"pattern":"needle","output_mode":"content","max_count":3}`, rules},
		{"grep", `{"pattern":"needle","glob":"*.go"}`, rules},
		{"grep", `{"pattern":"needle","glob":"src/**/*.go","path":"/"}`, nil},
		{"grep", `{"pattern":"needle","path":"/secret"}`, rules},
		{"grep", `{"pattern":"needle","path":"/secret/key.txt"}`, rules},
		{"grep", `{"pattern":"needle","path":"/src"}`, denyAll},
		{"grep", `{"pattern":"needle","path":"/src/a.go"}`, nil},
		{"grep", `{"pattern":"needle","path":"/nowhere"}`, nil},
		{"grep", `{"pattern":"ne.dle"}`, nil},
		{"glob", `{"pattern":"*"}`, rules},
		{"glob", `{"pattern":"**/*.go"}`, nil},
		{"glob", `{"pattern":"*.txt","path":"/secret"}`, rules},
		{"glob", `{"pattern":"*","path":"/src"}`, denyAll},
		{"glob", `{"pattern":"*","path":"/README.md"}`, nil},
		{"glob", `{"pattern":"*","path":"/nowhere"}`, nil},
		{"glob", `{"pattern":"{.env,*.md}"}`, rules},
		{"glob", `{"pattern":"src/*.go"}`, nil},
		{"read_file", `{"file_path":"/README.md"}`, nil},
		{"read_file", `{"file_path":"/long.txt","offset":10,"limit":5}`, nil},
		{"read_file", `{"file_path":"/long.txt","offset":2990}`, nil},
		{"read_file", `{"file_path":"/long.txt"}`, nil},
		{"read_file", `{"file_path":"/long.txt","offset":9999}`, nil},
		{"read_file", `{"file_path":"/long.txt","limit":0}`, nil},
		{"read_file", `{"file_path":"/long.txt","offset":-3,"limit":2}`, nil},
		{"read_file", `{"file_path":"/empty.txt"}`, nil},
		{"read_file", `{"file_path":"/a.png"}`, nil},
		{"read_file", `{"file_path":"/docs/bin.dat"}`, nil},
		{"read_file", `{"file_path":"/nowhere.txt"}`, nil},
		{"read_file", `{"file_path":"/src"}`, nil},
		{"read_file", `{"file_path":"/secret/key.txt"}`, rules},
		{"read_file", `{"file_path":"/secret/pub/ok.txt"}`, rules},
	}
	tools := byName(New(Options{GrepMaxFileBytes: 1024, MaxOutputChars: 30000}))
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s %s %v", c.tool, c.args, c.rules), func(t *testing.T) {
			rs, err := perm.ParseRules(c.rules)
			if err != nil {
				t.Fatal(err)
			}
			local := &failFS{Memory: vfs.NewMemory(vfstest.Files(files))}
			want := call(t, tools[c.tool], vfs.Track(perm.Wrap(local, rs)), c.args)
			remote := &remoteFS{inner: &failFS{Memory: vfs.NewMemory(vfstest.Files(files))}}
			got := call(t, tools[c.tool], vfs.Track(perm.Wrap(remote, rs)), c.args)
			if got.Content != want.Content || got.IsError != want.IsError {
				t.Errorf("in one call:\n%q (error %v)\nfile by file:\n%q (error %v)", got.Content, got.IsError, want.Content, want.IsError)
			}
			if n, m := remote.searches.Load(), remote.calls.Load(); n != 1 || m != 0 {
				t.Errorf("%d searches and %d other calls, want 1 and nothing else", n, m)
			}
			for _, denied := range []string{"/secret/key.txt", "/docs/private.md", "hunter2"} {
				if len(c.rules) > 0 && strings.Contains(got.Content, denied) && !strings.Contains(c.args, denied) {
					t.Errorf("a denied path shows: %q", got.Content)
				}
			}
		})
	}
}

// A composite searches its fallback in one call, the routes below the path
// in process, and a path inside a route file by file.
func TestCompositeSearchesOnlyItsFallback(t *testing.T) {
	remote := &remoteFS{inner: vfs.NewMemory(vfstest.Files(map[string]string{"/src/a.go": "needle", "/b.txt": "needle"}))}
	c, err := vfs.NewComposite(remote, vfs.Route{Prefix: "/mem", Backend: vfs.NewMemory(vfstest.Files(map[string]string{"/m.txt": "needle"}))})
	if err != nil {
		t.Fatal(err)
	}
	grep := byName(New(Options{}))["grep"]
	if res := call(t, grep, c, `{"pattern":"needle","path":"/src"}`); res.Content != "/src/a.go" || remote.searches.Load() != 1 {
		t.Errorf("under the fallback: %q after %d searches", res.Content, remote.searches.Load())
	}
	if res := call(t, grep, c, `{"pattern":"needle"}`); res.Content != "/b.txt\n/mem/m.txt\n/src/a.go" || remote.searches.Load() != 2 || remote.calls.Load() != 0 {
		t.Errorf("over a route: %q after %d searches and %d other calls", res.Content, remote.searches.Load(), remote.calls.Load())
	}
	if res := call(t, grep, c, `{"pattern":"needle","path":"/mem"}`); res.Content != "/mem/m.txt" || remote.searches.Load() != 2 || remote.calls.Load() != 0 {
		t.Errorf("in a route: %q after %d searches and %d other calls", res.Content, remote.searches.Load(), remote.calls.Load())
	}
}
