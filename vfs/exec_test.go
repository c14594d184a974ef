package vfs_test

import (
	"context"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
)

type runsCommands struct{ *vfs.Memory }

func (runsCommands) Execute(context.Context, vfs.ExecRequest) (vfs.ExecResult, error) {
	return vfs.ExecResult{Output: "ran"}, nil
}

type wrapper struct{ vfs.Backend }

func (w wrapper) Unwrap() vfs.Backend { return w.Backend }

type loop struct{ *vfs.Memory }

func (l *loop) Unwrap() vfs.Backend { return l }

func TestAsExecutor(t *testing.T) {
	ex := runsCommands{vfs.NewMemory(nil)}
	mounted, err := vfs.NewComposite(vfs.Track(ex), vfs.Route{Prefix: "/skills/", Backend: vfs.NewMemory(nil), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	overMemory, err := vfs.NewComposite(vfs.NewMemory(nil), vfs.Route{Prefix: "/x/", Backend: ex})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		b    vfs.Backend
		want bool
	}{
		{"nil", nil, false},
		{"memory", vfs.NewMemory(nil), false},
		{"a layer", vfs.NewMemory(nil).Branch(), false},
		{"the executor", ex, true},
		{"tracked", vfs.Track(ex), true},
		{"tracked twice", vfs.Track(vfs.Track(ex)), true},
		{"behind an Unwrap", wrapper{vfs.Track(ex)}, true},
		{"tracked memory", vfs.Track(vfs.NewMemory(nil)), false},
		{"a composite over the executor", mounted, true},
		{"a composite that only mounts one", overMemory, false},
		{"an unlayered composite", mounted.Unlayered(), true},
		{"a wrapper that unwraps to itself", &loop{vfs.NewMemory(nil)}, false},
	} {
		got, ok := vfs.AsExecutor(tc.b)
		if ok != tc.want || ok && got == nil {
			t.Errorf("%s: AsExecutor = %v, %v; want ok %v", tc.name, got, ok, tc.want)
		}
		if ok {
			if res, _ := got.Execute(context.Background(), vfs.ExecRequest{}); res.Output != "ran" {
				t.Errorf("%s: found the wrong executor", tc.name)
			}
		}
	}
}
