// Command server is the test MCP server run as a subprocess by the tests
// of package mcp. It speaks over stdin and stdout and writes "hang started"
// on stderr when a call of its hang tool begins.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/deepagents-go/deepagents/mcp/internal/mcptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	extra := flag.Int("extra", 0, "extra tools")
	page := flag.Int("page", 0, "tools/list page size")
	fail := flag.String("fail", "", "write this on stderr and exit 1 at once")
	flag.Parse()
	if *fail != "" {
		fmt.Fprintln(os.Stderr, *fail)
		os.Exit(1)
	}
	s := mcptest.NewServer(mcptest.Options{Extra: *extra, PageSize: *page, OnHang: func() {
		fmt.Fprintln(os.Stderr, "hang started")
	}})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
