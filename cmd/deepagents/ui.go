package main

import "github.com/deepagents-go/deepagents/server/ui"

// The web UI is served by `deepagents serve` at "/".
func init() { serveUI = ui.Handler() }
