package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
)

// openT opens path with the default options, closed at the test's end.
func openT(t *testing.T, path string) *Saver {
	t.Helper()
	return openOpts(t, path, Options{})
}

// openOpts opens path with opts, closed at the test's end.
func openOpts(t *testing.T, path string, opts Options) *Saver {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func putMsg(t *testing.T, s *Saver, id, parent, text string) {
	t.Helper()
	if err := s.Put(context.Background(), checkpoint.Step{ThreadID: "th", ID: id, ParentID: parent,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}); err != nil {
		t.Fatal(err)
	}
}

// messages lists thread th's latest messages and pending results.
func messages(t *testing.T, s *Saver) string {
	t.Helper()
	c, err := s.Get(context.Background(), checkpoint.Ref{ThreadID: "th"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range c.State.Messages {
		out = append(out, m.Content)
	}
	for _, p := range c.Pending {
		out = append(out, "result:"+p.Result.Content)
	}
	return strings.Join(out, ",")
}

// FileTableDB is the database a file table runs on.
func FileTableDB(t *FileTable) *sql.DB { return t.db }
