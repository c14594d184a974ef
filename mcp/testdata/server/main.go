// Command server is the test MCP server run as a subprocess by the tests
// of package mcp. It speaks over stdin and stdout and writes "hang started"
// on stderr when a call of its hang tool begins. With -calls FILE it appends
// "call NAME" to FILE for every tool call it receives, before the tool runs
// (so the line is there before any reply is sent); with -faults it has the
// fault tools of mcptest.Faults (the drop tool exits the process).
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
	calls := flag.String("calls", "", `append "call NAME" to this file for every tool call received`)
	faults := flag.Bool("faults", false, "add the fault tools")
	flag.Parse()
	if *fail != "" {
		fmt.Fprintln(os.Stderr, *fail)
		os.Exit(1)
	}
	o := mcptest.Options{Extra: *extra, PageSize: *page, OnHang: func() {
		fmt.Fprintln(os.Stderr, "hang started")
	}}
	if *calls != "" {
		o.OnCall = func(name string) {
			f, err := os.OpenFile(*calls, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Fprintln(f, "call "+name)
			f.Close()
		}
	}
	var out = os.Stdout
	var tr sdk.Transport = &sdk.StdioTransport{}
	if *faults {
		o.Faults = &mcptest.Faults{Drop: func() { os.Exit(3) }}
		tr = &sdk.IOTransport{Reader: os.Stdin, Writer: o.Faults.Writer(out)}
	}
	s := mcptest.NewServer(o)
	if err := s.Run(context.Background(), tr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
