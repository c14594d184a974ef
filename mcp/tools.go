package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxToolName is the longest tool name providers accept.
const MaxToolName = 64

// ToolName is the name an MCP server's tool has for the model:
// mcp__SERVER__TOOL, with characters other than letters, digits, '_' and
// '-' replaced by '_'. A name longer than 64 characters is cut and ends
// with '_' and 8 hex digits of its SHA-256, so it stays unique.
func ToolName(server, name string) string {
	full := "mcp__" + sanitize(server) + "__" + sanitize(name)
	if len(full) <= MaxToolName {
		return full
	}
	sum := sha256.Sum256([]byte("mcp__" + server + "__" + name))
	return full[:MaxToolName-9] + "_" + hex.EncodeToString(sum[:])[:8]
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Tool is one tool of an MCP server as the agent binds it. A call goes to
// the server's live session; when the server has failed, the call answers
// an error result at once.
type Tool struct {
	c      *conn
	remote string
	spec   llm.ToolSpec
}

// Spec implements tool.Tool: the server's description and input schema as
// the server sent them.
func (t *Tool) Spec() llm.ToolSpec { return t.spec }

// Server is the name of the tool's server.
func (t *Tool) Server() string { return t.c.srv.Name }

// RemoteName is the tool's name on its server.
func (t *Tool) RemoteName() string { return t.remote }

// MCPServers names the server this tool belongs to, so that a subagent
// whose spec names MCP servers keeps only those servers' tools.
func (t *Tool) MCPServers() []string { return []string{t.c.srv.Name} }

// Run implements tool.Tool.
func (t *Tool) Run(ctx context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	raw := strings.TrimSpace(string(args))
	if raw == "" || raw == "null" {
		raw = "{}"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		return tool.Errorf("Invalid arguments for %s: they must be one JSON object (%v). Fix the arguments and call %s again.", t.spec.Name, err, t.spec.Name), nil
	}
	res, err := t.c.call(ctx, t.remote, json.RawMessage(raw))
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, context.Cause(ctx)
		}
		if _, down := err.(*serverDownError); down {
			return tool.Errorf("%v", err), nil
		}
		return tool.Errorf("The MCP tool %s failed: %v", t.spec.Name, err), nil
	}
	return convertResult(res, env != nil && env.Capabilities.Images), nil
}

// MaxImageBytes caps an image kept from a result; a larger one is named
// in the text instead.
const MaxImageBytes = 5 << 20

// convertResult turns a tools/call answer into a tool result: text blocks
// joined by newlines, images kept as image parts, resource links as
// "[resource] URI", the structured content's JSON when there is no text, and
// IsError as an error result. Images reach only a model that reads them
// (images), and only up to MaxImageBytes; otherwise a line names them.
func convertResult(res *sdk.CallToolResult, images bool) tool.Result {
	var parts []llm.Part
	hasText, hasImage := false, false
	addText := func(s string) {
		if hasText {
			s = "\n" + s
		}
		hasText = true
		parts = append(parts, llm.TextPart(s))
	}
	for _, c := range res.Content {
		switch v := c.(type) {
		case *sdk.TextContent:
			addText(v.Text)
		case *sdk.ImageContent:
			switch {
			case !images:
				addText(fmt.Sprintf("[image] %s, %d bytes (not shown: this model does not read images)", v.MIMEType, len(v.Data)))
			case len(v.Data) > MaxImageBytes:
				addText(fmt.Sprintf("[image] %s, %d bytes (not shown: larger than %d bytes)", v.MIMEType, len(v.Data), MaxImageBytes))
			default:
				hasImage = true
				parts = append(parts, llm.ImagePart(v.MIMEType, v.Data))
			}
		case *sdk.AudioContent:
			// Messages carry no audio: the model learns that there was some.
			addText(fmt.Sprintf("[audio] %s, %d bytes (not shown)", v.MIMEType, len(v.Data)))
		case *sdk.ResourceLink:
			addText("[resource] " + v.URI)
		case *sdk.EmbeddedResource:
			if r := v.Resource; r != nil {
				if r.Text != "" {
					addText(r.Text)
				} else {
					addText("[resource] " + r.URI)
				}
			}
		}
	}
	var structured json.RawMessage
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			structured = b
			if !hasText {
				addText(string(b))
			}
		}
	}
	var out tool.Result
	switch {
	case hasImage:
		out = tool.WithParts(parts...)
	case hasText:
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		out = tool.Text(b.String())
	default:
		out = tool.Text("(the tool returned no content)")
	}
	out.Structured = structured
	out.IsError = res.IsError
	return out
}

// wrap builds the bound tools of a server's listing: the allowed ones, minus
// the disabled ones, each under its mcp__ name (a second tool whose name
// comes out the same gets a hash suffix).
func (c *conn) wrap(list []*sdk.Tool) []*Tool {
	cfg := c.srv.Config
	var out []*Tool
	seen := map[string]bool{}
	for _, st := range list {
		if st == nil || st.Name == "" {
			continue
		}
		if cfg.AllowedTools != nil && !slices.Contains(cfg.AllowedTools, st.Name) {
			continue
		}
		if slices.Contains(cfg.DisabledTools, st.Name) {
			continue
		}
		name := ToolName(c.srv.Name, st.Name)
		if seen[name] {
			sum := sha256.Sum256([]byte(st.Name))
			name = name[:min(len(name), MaxToolName-9)] + "_" + hex.EncodeToString(sum[:])[:8]
		}
		seen[name] = true
		schema := json.RawMessage(`{"type":"object"}`)
		if b := schemaJSON(st.InputSchema); b != nil {
			schema = b
		}
		out = append(out, &Tool{c: c, remote: st.Name, spec: llm.ToolSpec{Name: name, Description: st.Description, Parameters: schema}})
	}
	return out
}

// schemaJSON is the server's input schema as JSON, its content unchanged
// (the SDK hands it over decoded, so keys come back in sorted order); nil
// when there is none.
func schemaJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	b := bytes.TrimSpace(buf.Bytes())
	if string(b) == "null" {
		return nil
	}
	return b
}

// Tools returns the tools of every connected server, server by server in
// name order, each server's in its own order.
func (m *Manager) Tools() []*Tool {
	var out []*Tool
	for _, c := range m.servers {
		c.mu.Lock()
		if c.status == StatusConnected {
			out = append(out, c.tools...)
		}
		c.mu.Unlock()
	}
	return out
}

// AgentTools is Tools as tool.Tools, for deepagents.Config.Tools.
func (m *Manager) AgentTools() []tool.Tool {
	var out []tool.Tool
	for _, t := range m.Tools() {
		out = append(out, t)
	}
	return out
}

// specTokens is what the definitions of tools cost: the estimate of each
// one's name, description and schema.
func specTokens[T interface{ Spec() llm.ToolSpec }](tools []T) int {
	n := 0
	for _, t := range tools {
		n += toolTokens(t.Spec())
	}
	return n
}

func toolTokens(s llm.ToolSpec) int {
	return tokens.EstimateText(s.Name + "\n" + s.Description + "\n" + string(s.Parameters))
}
