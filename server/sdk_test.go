package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSDK drives the server with the official LangGraph JS SDK
// (@langchain/langgraph-sdk from npm, installed in sdktest/ by `npm ci`):
// see sdktest/sdk.test.mjs for what it checks.
func TestSDK(t *testing.T) {
	skip := t.Skip
	if os.Getenv("DEEPAGENTS_TEST_NODE_REQUIRED") != "" {
		skip = t.Fatal
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node is not installed; CI runs this test (install Node.js, then npm ci in server/sdktest)")
	}
	if _, err := os.Stat(filepath.Join("sdktest", "node_modules", "@langchain", "langgraph-sdk", "package.json")); err != nil {
		skip("the LangGraph SDK is not installed; run `npm ci` in server/sdktest (CI does)")
	}
	a, err := DemoAgent("agent", 0)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Agents: []AgentSpec{{Name: "agent", Agent: a}}, Token: "sdk-token"})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sdk.test.mjs")
	cmd.Dir = "sdktest"
	cmd.Env = append(os.Environ(), "SERVER_URL="+h.http.URL, "SERVER_TOKEN=sdk-token")
	out, err := cmd.CombinedOutput()
	t.Logf("node sdk.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("the SDK test failed: %v", err)
	}
}
