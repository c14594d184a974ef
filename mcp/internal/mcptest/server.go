// Package mcptest is a small MCP server built with the official SDK, for
// the tests of package mcp: in memory, over HTTP, and as a subprocess
// (mcp/testdata/server).
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options shape the server.
type Options struct {
	// Extra adds this many tools named tool_000, tool_001, … with long
	// descriptions (for the progressive-disclosure tests).
	Extra int
	// PageSize is the tools/list page size (the SDK's default when 0).
	PageSize int
	// OnHang is called when a call of the hang tool has started.
	OnHang func()
	// OnCall, when set, is told the name of every tool called, as the
	// request arrives (before the tool runs).
	OnCall func(name string)
	// Faults, when set, adds the fault tools (see Faults): each answers
	// normally, and Faults spoils the answer on its way out.
	Faults *Faults
}

// PNG is the image the image tool returns.
var PNG = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 1, 2, 3}

type textIn struct {
	Text string `json:"text" jsonschema:"the text to echo (<= 1000 characters)"`
}

type sizeIn struct {
	N int `json:"n" jsonschema:"how many characters"`
}

type empty struct{}

// NewServer returns the test server.
func NewServer(o Options) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, &sdk.ServerOptions{PageSize: o.PageSize})
	if o.OnCall != nil {
		s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
			return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
				if r, ok := req.(*sdk.CallToolRequest); ok && method == "tools/call" && r.Params != nil {
					o.OnCall(r.Params.Name)
				}
				return next(ctx, method, req)
			}
		})
	}
	if f := o.Faults; f != nil {
		for _, kind := range FaultKinds {
			sdk.AddTool(s, &sdk.Tool{Name: kind, Description: "Answers, and has the answer spoiled: " + kind + "."},
				func(_ context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
					f.arm(kind)
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a good answer"}}}, nil, nil
				})
		}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes the text back."},
		func(_ context.Context, _ *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "lines", Description: "Answers two text blocks."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "first"}, &sdk.TextContent{Text: "second"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "boom: the disk is full"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "picture", Description: "Returns a caption and an image."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a tiny picture"}, &sdk.ImageContent{MIMEType: "image/png", Data: PNG}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "link", Description: "Returns a resource link."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.ResourceLink{URI: "file:///srv/report.txt", Name: "report"}}}, nil, nil
		})
	s.AddTool(&sdk.Tool{Name: "stats", Description: "Returns structured content only.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"count": 3, "ok": true}}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "big", Description: "Returns n characters of text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in sizeIn) (*sdk.CallToolResult, any, error) {
			var b strings.Builder
			for i := 0; b.Len() < in.N; i++ {
				fmt.Fprintf(&b, "line %06d of a very large answer\n", i)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()[:in.N]}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "Returns the server's process id."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
			if o.OnHang != nil {
				o.OnHang()
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	sdk.AddTool(s, &sdk.Tool{Name: "grow", Description: "Adds a tool named grown."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
			sdk.AddTool(s, &sdk.Tool{Name: "grown", Description: "Was added later."},
				func(_ context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grown here"}}}, nil, nil
				})
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "added"}}}, nil, nil
		})
	filler := strings.Repeat("It reads and writes records of the inventory service, with filters, paging and sorting. ", 8)
	for i := range o.Extra {
		name := fmt.Sprintf("tool_%03d", i)
		desc := fmt.Sprintf("Tool number %d (%s). %s", i, Topic(i), filler)
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: desc},
			func(_ context.Context, _ *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " did " + in.Text}}}, nil, nil
			})
	}
	return s
}

// Topic is a word that only extra tool i has in its description.
func Topic(i int) string { return fmt.Sprintf("topic%03dzz", i) }
