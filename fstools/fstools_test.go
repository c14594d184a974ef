package fstools

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

// backend is one way of presenting the same files to the tools.
type backend struct {
	name string
	make func(t *testing.T, files map[string]string) vfs.Backend
}

// backends lists the backends every table runs on: the in-state Memory, a
// Layer over it, a Layer whose files are partly its own with base files
// hidden by tombstones, and a Tracked wrapper.
var backends = []backend{
	{"memory", func(t *testing.T, files map[string]string) vfs.Backend {
		return vfs.NewMemory(vfstest.Files(files))
	}},
	{"layer", func(t *testing.T, files map[string]string) vfs.Backend {
		return vfs.NewMemory(vfstest.Files(files)).Branch()
	}},
	{"layer-mixed", vfstest.MixedLayer},
	{"tracked", func(t *testing.T, files map[string]string) vfs.Backend {
		return vfs.Track(vfs.NewMemory(vfstest.Files(files)))
	}},
}

func byName(tools []tool.Tool) map[string]tool.Tool {
	m := map[string]tool.Tool{}
	for _, tl := range tools {
		m[tl.Spec().Name] = tl
	}
	return m
}

var defaults = byName(Tools())

// call runs one tool call; a Go error fails the test.
func call(t *testing.T, tl tool.Tool, fs vfs.Backend, args string) tool.Result {
	t.Helper()
	res, err := tl.Run(context.Background(), &tool.Env{CallID: "call_1", Files: fs}, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): Go error %v", tl.Spec().Name, args, err)
	}
	return res
}

// tcase is one row of a tool's table. want is the exact output; for error
// rows, wantErr lists phrases the message must contain. check, if set,
// inspects the filesystem afterwards.
type tcase struct {
	name    string
	files   map[string]string
	args    string
	want    string
	wantErr []string
	tools   []tool.Tool // default: Tools()
	check   func(t *testing.T, fs vfs.Backend)
}

func runTable(t *testing.T, toolName string, cases []tcase) {
	t.Helper()
	for _, b := range backends {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				fs := b.make(t, tc.files)
				tools := defaults
				if tc.tools != nil {
					tools = byName(tc.tools)
				}
				res := call(t, tools[toolName], fs, tc.args)
				if tc.wantErr != nil {
					if !res.IsError {
						t.Fatalf("want an error result, got %q", res.Content)
					}
					if !strings.HasPrefix(res.Content, "Error: ") && !strings.HasPrefix(res.Content, "Invalid arguments") {
						t.Errorf("error text should start with Error: or Invalid arguments, got %q", res.Content)
					}
					for _, w := range tc.wantErr {
						if !strings.Contains(res.Content, w) {
							t.Errorf("error %q does not mention %q", res.Content, w)
						}
					}
				} else {
					if res.IsError {
						t.Fatalf("unexpected error result %q", res.Content)
					}
					if res.Content != tc.want {
						t.Errorf("output mismatch\n got: %q\nwant: %q", res.Content, tc.want)
					}
				}
				if tc.check != nil {
					tc.check(t, fs)
				}
			})
		}
	}
}

func content(t *testing.T, fs vfs.Backend, p string) string {
	t.Helper()
	s, err := fs.Read(context.Background(), p)
	if err != nil {
		t.Fatalf("reading %s: %v", p, err)
	}
	return s
}

func hasContent(p, want string) func(t *testing.T, fs vfs.Backend) {
	return func(t *testing.T, fs vfs.Backend) {
		t.Helper()
		if got := content(t, fs, p); got != want {
			t.Errorf("%s holds %q, want %q", p, got, want)
		}
	}
}

func missing(paths ...string) func(t *testing.T, fs vfs.Backend) {
	return func(t *testing.T, fs vfs.Backend) {
		t.Helper()
		for _, p := range paths {
			if _, err := fs.Stat(context.Background(), p); err == nil {
				t.Errorf("%s still exists", p)
			}
		}
	}
}

func unchanged(files map[string]string) func(t *testing.T, fs vfs.Backend) {
	return func(t *testing.T, fs vfs.Backend) {
		t.Helper()
		got := map[string]string{}
		for e, err := range fs.Walk(context.Background(), "/") {
			if err != nil {
				t.Fatal(err)
			}
			got[e.Path] = content(t, fs, e.Path)
		}
		want := map[string]string{}
		for p, c := range files {
			cp, _ := vfs.Clean(p)
			want[cp] = c
		}
		if !maps.Equal(got, want) {
			t.Errorf("files changed:\n got %q\nwant %q", got, want)
		}
	}
}

// The shared invalid-path rows every path-taking tool must refuse.
func badPathCases(param, extra string) []tcase {
	arg := func(p string) string {
		b, _ := json.Marshal(p)
		return `{"` + param + `":` + string(b) + extra + `}`
	}
	return []tcase{
		{name: "dotdot", args: arg("/a/../etc/passwd"), wantErr: []string{"invalid path", "'..'"}},
		{name: "home", args: arg("~/notes.md"), wantErr: []string{"invalid path", "~"}},
		{name: "windows drive", args: arg(`C:\Users\x.txt`), wantErr: []string{"invalid path", "Windows"}},
		{name: "windows slash", args: arg("C:/x.txt"), wantErr: []string{"Windows"}},
		{name: "nul", args: arg("/a\x00b"), wantErr: []string{"NUL"}},
	}
}

func TestAPI(t *testing.T) {
	tools := Tools()
	if len(tools) != 7 || len(Names) != 7 {
		t.Fatalf("want 7 tools and names, got %d and %d", len(tools), len(Names))
	}
	for i, tl := range tools {
		if got := tl.Spec().Name; got != Names[i] {
			t.Errorf("tool %d is %q, want %q", i, got, Names[i])
		}
	}
	want := []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "delete"}
	if !slices.Equal(Names, want) {
		t.Errorf("Names = %v", Names)
	}
	// A fresh slice each time, of the same shared tools.
	tools[0] = nil
	again := Tools()
	if again[0] == nil {
		t.Error("Tools returned a shared slice")
	}
	if again[1] != Tools()[1] {
		t.Error("Tools should reuse the tools it built once")
	}
	// New with zero options is Tools; other options change the text.
	for i, tl := range New(Options{}) {
		if tl.Spec().Description != again[i].Spec().Description || string(tl.Spec().Parameters) != string(again[i].Spec().Parameters) {
			t.Errorf("New(Options{}) differs from Tools() for %s", tl.Spec().Name)
		}
	}
	custom := byName(New(Options{ReadLimit: 7, MaxLineChars: 50, GrepMaxResults: 9, GlobMaxResults: 11}))
	for name, frag := range map[string]string{"read_file": "default 7", "glob": "at most 11"} {
		if d := custom[name].Spec().Description; !strings.Contains(d, frag) {
			t.Errorf("%s description %q lacks %q", name, d, frag)
		}
	}
	if p := string(custom["grep"].Spec().Parameters); !strings.Contains(p, `"default":9`) || !strings.Contains(p, "cut at 50") {
		t.Errorf("grep schema does not reflect options: %s", p)
	}
	if p := string(custom["read_file"].Spec().Parameters); !strings.Contains(p, `"default":7`) {
		t.Errorf("read_file schema does not reflect options: %s", p)
	}

	if n := len(Tools()); n != 7 {
		t.Errorf("Tools() has %d tools, want 7", n)
	}
}

// Every schema is compact, closed, without $schema, and requires exactly the
// parameters the tool cannot do without; every parameter is described.
func TestSchemas(t *testing.T) {
	required := map[string][]string{
		"ls":         nil,
		"read_file":  {"file_path"},
		"write_file": {"file_path", "content"},
		"edit_file":  {"file_path", "old_string", "new_string"},
		"glob":       {"pattern"},
		"grep":       {"pattern"},
		"delete":     {"file_path"},
	}
	for _, tl := range Tools() {
		spec := tl.Spec()
		raw := string(spec.Parameters)
		if strings.Contains(raw, "$schema") || strings.ContainsAny(raw, "\n\t") {
			t.Errorf("%s: schema not compact or has $schema: %s", spec.Name, raw)
		}
		var s struct {
			Type       string
			Properties map[string]struct {
				Type        string
				Description string
			}
			Required             []string
			AdditionalProperties *bool
		}
		if err := json.Unmarshal(spec.Parameters, &s); err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: want a closed object schema: %s", spec.Name, raw)
		}
		if !slices.Equal(s.Required, required[spec.Name]) {
			t.Errorf("%s: required = %v, want %v", spec.Name, s.Required, required[spec.Name])
		}
		for name, p := range s.Properties {
			if p.Description == "" || p.Type == "" {
				t.Errorf("%s.%s: needs a type and a description", spec.Name, name)
			}
		}
		if spec.Description == "" {
			t.Errorf("%s: no description", spec.Name)
		}
	}
}

func TestNoFilesystem(t *testing.T) {
	for _, tl := range Tools() {
		for _, env := range []*tool.Env{nil, {}} {
			res, err := tl.Run(context.Background(), env, json.RawMessage(`{"file_path":"/a","pattern":"x","content":"","old_string":"a","new_string":"b"}`))
			if err != nil {
				t.Fatalf("%s: %v", tl.Spec().Name, err)
			}
			// Every tool is given a parameter it does not take, so the
			// arguments are refused before the missing filesystem matters.
			name := tl.Spec().Name
			if !res.IsError || !strings.HasPrefix(res.Content, "Invalid arguments for "+name+": unknown argument ") {
				t.Errorf("%s with env %v: %+v", name, env, res)
			}
		}
		res, err := tl.Run(context.Background(), &tool.Env{}, json.RawMessage(minimalArgs[tl.Spec().Name]))
		if err != nil || !res.IsError || !strings.Contains(res.Content, "no filesystem") {
			t.Errorf("%s without Files: %+v, %v", tl.Spec().Name, res, err)
		}
	}
}

var minimalArgs = map[string]string{
	"ls":         `{}`,
	"read_file":  `{"file_path":"/a"}`,
	"write_file": `{"file_path":"/a","content":"x"}`,
	"edit_file":  `{"file_path":"/a","old_string":"a","new_string":"b"}`,
	"glob":       `{"pattern":"*"}`,
	"grep":       `{"pattern":"x"}`,
	"delete":     `{"file_path":"/a"}`,
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fs := vfs.NewMemory(vfstest.Files(map[string]string{"/a": "a"}))
	for _, tl := range Tools() {
		_, err := tl.Run(ctx, &tool.Env{Files: fs}, json.RawMessage(minimalArgs[tl.Spec().Name]))
		if err == nil {
			t.Errorf("%s ran on a cancelled context", tl.Spec().Name)
		}
	}
	if content(t, fs, "/a") != "a" {
		t.Error("a cancelled call changed a file")
	}
}

// Optional arguments sent as null count as absent; required ones do not.
func TestNullArguments(t *testing.T) {
	fs := vfs.NewMemory(vfstest.Files(map[string]string{"/a.txt": "x\ny\n", "/d/b.txt": "y"}))
	for _, c := range []struct{ tool, args, want string }{
		{"ls", `{"path":null}`, "/a.txt (4 bytes)\n/d/"},
		{"read_file", `{"file_path":"/a.txt","offset":null,"limit":null}`, "     1\tx\n     2\ty"},
		{"grep", `{"pattern":"y","path":null,"glob":null,"output_mode":null,"max_count":null}`, "/a.txt\n/d/b.txt"},
		{"glob", `{"pattern":"*.txt","path":null}`, "/a.txt\n/d/b.txt"},
	} {
		res := call(t, defaults[c.tool], fs, c.args)
		if res.IsError || res.Content != c.want {
			t.Errorf("%s(%s) = %q (error %v), want %q", c.tool, c.args, res.Content, res.IsError, c.want)
		}
	}
	res := call(t, defaults["read_file"], fs, `{"file_path":null}`)
	if !res.IsError || !strings.Contains(res.Content, `missing required argument "file_path"`) {
		t.Errorf("null file_path: %q", res.Content)
	}
}

// The tools are shared by every call; run many at once under -race.
func TestConcurrentUse(t *testing.T) {
	shared := vfs.NewMemory(vfstest.Files(map[string]string{"/src/a.go": "package a\n", "/README": "hi\n"}))
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			fs := shared.Branch()
			env := &tool.Env{Files: fs}
			p := "/out/" + string(rune('a'+i%26)) + ".txt"
			steps := []struct{ tool, args string }{
				{"write_file", `{"file_path":"` + p + `","content":"one\ntwo\n"}`},
				{"edit_file", `{"file_path":"` + p + `","old_string":"two","new_string":"three"}`},
				{"read_file", `{"file_path":"` + p + `"}`},
				{"grep", `{"pattern":"package"}`},
				{"glob", `{"pattern":"**"}`},
				{"ls", `{}`},
				{"delete", `{"file_path":"` + p + `"}`},
			}
			for _, s := range steps {
				res, err := defaults[s.tool].Run(context.Background(), env, json.RawMessage(s.args))
				if err != nil || res.IsError {
					t.Errorf("%s: %v %q", s.tool, err, res.Content)
				}
			}
		})
	}
	wg.Wait()
	if shared.Len() != 2 {
		t.Errorf("layers leaked into the shared base: %v", shared.Files())
	}
}

// gutter is read_file's line-number prefix.
var gutter = regexp.MustCompile(`(?m)^ *[0-9]+(\.[0-9]+)?\t`)

// Text copied from read_file's output, gutter removed, must work as
// old_string, for LF and CRLF files alike.
func TestEditWithTextCopiedFromRead(t *testing.T) {
	for _, nl := range []string{"\n", "\r\n"} {
		for _, b := range backends {
			t.Run(b.name+"/"+strings.ReplaceAll(strings.ReplaceAll(nl, "\r", "CR"), "\n", "LF"), func(t *testing.T) {
				lines := []string{"func main() {", "\tx := 1", "\tfmt.Println(x)", "}"}
				orig := strings.Join(lines, nl) + nl
				fs := b.make(t, map[string]string{"/main.go": orig})
				out := call(t, defaults["read_file"], fs, `{"file_path":"/main.go"}`).Content
				shown := strings.Split(gutter.ReplaceAllString(out, ""), "\n")
				if !slices.Equal(shown, lines) {
					t.Fatalf("read_file shows %q", shown)
				}
				// One line, then (from a fresh read) two lines joined the way
				// the model sees them.
				edit := func(old, new string) {
					t.Helper()
					args, _ := json.Marshal(map[string]any{"file_path": "/main.go", "old_string": old, "new_string": new})
					res := call(t, defaults["edit_file"], fs, string(args))
					if res.IsError || res.Content != "Replaced 1 occurrence in /main.go." {
						t.Fatalf("edit %q: %q", old, res.Content)
					}
				}
				edit(shown[0], "func run() {")
				out = call(t, defaults["read_file"], fs, `{"file_path":"/main.go","offset":1,"limit":2}`).Content
				shown = strings.Split(strings.SplitN(gutter.ReplaceAllString(out, ""), "\n\n[", 2)[0], "\n")
				if len(shown) != 2 {
					t.Fatalf("read_file with offset shows %q", out)
				}
				two := strings.Join(shown, "\n")
				edit(two, strings.ReplaceAll(two, "x", "y"))
				want := strings.Join([]string{"func run() {", "\ty := 1", "\tfmt.Println(y)", "}"}, nl) + nl
				if got := content(t, fs, "/main.go"); got != want {
					t.Errorf("file is %q, want %q", got, want)
				}
			})
		}
	}
}
