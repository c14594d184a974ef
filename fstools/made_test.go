package fstools_test

import (
	"context"
	"testing"

	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/tool"
)

// Made knows the file tools this package built, with any limits, and no
// other tool, even one of the same name.
func TestMade(t *testing.T) {
	for _, tl := range append(fstools.Tools(), fstools.New(fstools.Options{ReadLimit: 7})...) {
		if !fstools.Made(tl) {
			t.Errorf("%s: not known as made here", tl.Spec().Name)
		}
	}
	own := tool.MustFunc("read_file", "Read.", func(context.Context, *tool.Env, struct{}) (string, error) { return "", nil })
	if fstools.Made(own) {
		t.Error("a tool of the same name made elsewhere is taken for one of the file tools")
	}
	if fstools.Made(nil) {
		t.Error("nil is taken for a file tool")
	}
}
