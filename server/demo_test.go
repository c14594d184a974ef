package server

import (
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/internal/demoagent"
)

// DemoAgent is the scripted demo agent the server's tests run against; the
// server itself takes whatever agent its caller builds.
func DemoAgent(name string, stepDelayMS float64) (*agent.Agent, error) {
	return demoagent.New(name, stepDelayMS)
}
