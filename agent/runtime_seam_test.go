package agent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// seamPackages are the packages on the loop's scheduling path: the loop,
// and the task tool that runs a subagent's loop inside a call.
var seamPackages = []string{"github.com/deepagents-go/deepagents/agent", "github.com/deepagents-go/deepagents/subagent"}

// seamExempt are the files allowed to schedule on their own (package
// directory and file name): the runtimes that implement the primitives,
// and why.
var seamExempt = map[string]string{
	"agent/runtime_inprocess.go": "the in-process runtimes (the default one and Sequential) implement the primitives",
}

// blockedCalls are the functions and types whose use is a goroutine, a
// wait or a timer outside the Runtime.
var blockedCalls = map[string]bool{
	"time.Sleep": true, "time.After": true, "time.AfterFunc": true, "time.NewTimer": true,
	"time.NewTicker": true, "time.Tick": true, "context.AfterFunc": true,
	"sync.WaitGroup": true, "sync.Cond": true, "sync.NewCond": true,
}

// The loop schedules only through the Runtime: no non-test file of package
// agent (nor of subagent, whose task tool runs a subagent's loop) but the
// runtime implementations starts a goroutine, selects, sends or receives on
// a channel, has a value or type of channel kind, or uses the wall clock's
// timers or a WaitGroup. A runtime that allows none of these (a
// durable-execution engine's workflow code) can then drive the loop.
func TestLoopSchedulesOnlyThroughRuntime(t *testing.T) {
	pkgs, imp := loadPackages(t, seamPackages...)
	listed := map[string]bool{}
	for _, pkg := range pkgs {
		dir := filepath.Base(pkg.Dir)
		fset := token.NewFileSet()
		var files []*ast.File
		for _, name := range pkg.GoFiles {
			listed[dir+"/"+name] = true
			f, err := parser.ParseFile(fset, filepath.Join(pkg.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: importer.ForCompiler(fset, "gc", imp)}
		if _, err := conf.Check(pkg.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-checking %s: %v", pkg.ImportPath, err)
		}
		checked := 0
		for _, f := range files {
			name := dir + "/" + filepath.Base(fset.Position(f.Package).Filename)
			if _, ok := seamExempt[name]; ok {
				continue
			}
			checked++
			for _, p := range schedulingIn(fset, f, info) {
				t.Errorf("%s: schedules outside the Runtime; use its primitives (Fanout, Queue, Semaphore, Timeout)", p)
			}
		}
		if checked == 0 {
			t.Errorf("checked no file of %s", pkg.ImportPath)
		}
	}
	for name := range seamExempt {
		if !listed[name] {
			t.Errorf("exempt file %s is not in the packages checked: drop it from seamExempt", name)
		}
	}
	if len(listed) < 20 {
		t.Fatalf("checked %d files; the list %v looks wrong", len(listed), listed)
	}
}

// The check finds every construct it is meant to: a file with each of them
// gives one seamFinding per line marked "want".
func TestSchedulingCheckFindsEachConstruct(t *testing.T) {
	const src = `package p

import (
	"context"
	"sync"
	"time"
)

type box struct{ c chan int } // want (chan type)

func f(ctx context.Context, wg *sync.WaitGroup) { // want (WaitGroup)
	go func() {}() // want
	c := make(chan int, 1) // want (chan type) + want (chan value)
	c <- 1 // want (send) + want (chan value)
	<-c // want (receive) + want (chan value)
	select {} // want
	for range ctx.Done() { // want (chan value)
	}
	time.Sleep(time.Second) // want
	t := time.NewTimer(time.Second) // want
	_ = t
	var b box
	_ = b
}
`
	_, imp := loadPackages(t, seamPackages[0])
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", imp)}
	if _, err := conf.Check("p", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	for _, p := range schedulingIn(fset, f, info) {
		got[p.Line]++
	}
	for i, line := range strings.Split(src, "\n") {
		if want := strings.Count(line, "want"); got[i+1] < want {
			t.Errorf("line %d %q: %d findings, want at least %d", i+1, strings.TrimSpace(line), got[i+1], want)
		} else if want == 0 && got[i+1] > 0 {
			t.Errorf("line %d %q: %d findings, want none", i+1, strings.TrimSpace(line), got[i+1])
		}
	}
}

// schedulingIn lists where f starts a goroutine, selects, uses a channel or
// a blocked call, with what it found.
func schedulingIn(fset *token.FileSet, f *ast.File, info *types.Info) []seamFinding {
	var out []seamFinding
	add := func(n ast.Node, what string) {
		out = append(out, seamFinding{Position: fset.Position(n.Pos()), what: what})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			add(n, "go statement")
		case *ast.SelectStmt:
			add(n, "select statement")
		case *ast.SendStmt:
			add(n, "channel send")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				add(n, "channel receive")
			}
		case *ast.ChanType:
			add(n, "channel type")
		case *ast.Ident:
			if obj := info.Uses[n]; obj != nil && obj.Pkg() != nil && blockedCalls[obj.Pkg().Path()+"."+obj.Name()] {
				add(n, obj.Pkg().Path()+"."+obj.Name())
			}
		}
		if e, ok := n.(ast.Expr); ok {
			if tv, ok := info.Types[e]; ok && tv.Type != nil && !tv.IsType() {
				if _, isChan := tv.Type.Underlying().(*types.Chan); isChan {
					add(n, "value of channel type "+tv.Type.String())
				}
			}
		}
		return true
	})
	return out
}

type seamFinding struct {
	token.Position
	what string
}

func (f seamFinding) String() string { return fmt.Sprintf("%s: %s", f.Position, f.what) }

// listedPackage is what `go list -json` says of a package.
type listedPackage struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
}

// loadPackages lists the packages named (their non-test files for this
// build) and returns them with an importer lookup of their dependencies'
// export data, as the go command built them.
func loadPackages(t *testing.T, paths ...string) ([]listedPackage, func(string) (io.ReadCloser, error)) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-json=ImportPath,Dir,Export,GoFiles"}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	var pkgs []listedPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if slices.Contains(paths, p.ImportPath) {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) != len(paths) {
		t.Fatalf("go list found %d of the packages %v", len(pkgs), paths)
	}
	return pkgs, func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(file)
	}
}
