package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// mcp_search checks its arguments against its schema: a call without a
// query, or with one of the wrong type, is an error result naming the
// tool, and a query that matches nothing says so.
func TestSearchArguments(t *testing.T) {
	s := &searchTool{tools: func() []*Tool { return nil }}
	for _, tc := range []struct {
		args    string
		isError bool
		want    string
	}{
		{`{}`, true, "Invalid arguments for mcp_search"},
		{`{"query":3}`, true, "Invalid arguments for mcp_search"},
		{`{"query":"weather","extra":1}`, true, "Invalid arguments for mcp_search"},
		{`{"query":"weather"}`, false, `No MCP tool matches "weather"`},
	} {
		res, err := s.Run(context.Background(), nil, json.RawMessage(tc.args))
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		if res.IsError != tc.isError || !strings.Contains(res.Content, tc.want) {
			t.Errorf("%s: got error=%v %q, want error=%v and %q", tc.args, res.IsError, res.Content, tc.isError, tc.want)
		}
	}
}
