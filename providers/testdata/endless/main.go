// Command endless runs two turns of an agent on one thread against a model
// server (the tests of package providers start one): the first is answered
// normally, the second never ends. It prints, as JSON, how each turn ended,
// what the thread saved, and the process's peak resident memory (VmHWM),
// for the response-limit tests. It is built without the race detector, so
// the memory is the program's own.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/anthropic"
	"github.com/deepagents-go/deepagents/providers/gemini"
	"github.com/deepagents-go/deepagents/providers/openai"
	"github.com/deepagents-go/deepagents/providers/retry"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

// Report is what the program prints.
type Report struct {
	FirstStatus string   `json:"first_status"`
	FirstError  string   `json:"first_error,omitempty"`
	Status      string   `json:"status"`
	Error       string   `json:"error"`
	TooLarge    bool     `json:"too_large"`
	Limit       string   `json:"limit,omitempty"`
	Wire        string   `json:"wire,omitempty"`
	Saved       []string `json:"saved"`
	SavedStatus string   `json:"saved_status"`
	PeakKB      int64    `json:"peak_kb"`
}

func main() {
	provider := flag.String("provider", "openai", "openai, anthropic or gemini")
	url := flag.String("url", "", "the server's base URL")
	stream := flag.Bool("stream", true, "stream the model calls")
	maxBytes := flag.Int64("max-bytes", 0, "ResponseLimits.MaxBytes")
	maxCalls := flag.Int("max-calls", 0, "ResponseLimits.MaxToolCalls")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, *provider, *url, *stream, llm.ResponseLimits{MaxBytes: *maxBytes, MaxToolCalls: *maxCalls}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, provider, url string, stream bool, limits llm.ResponseLimits) error {
	var m llm.Model
	var err error
	switch provider {
	case "openai":
		m, err = openai.New(openai.Config{Model: "m", APIKey: "k", BaseURL: url, Retry: noRetry})
	case "anthropic":
		m, err = anthropic.New(anthropic.Config{Model: "m", APIKey: "k", BaseURL: url, Retry: noRetry})
	case "gemini":
		m, err = gemini.New(ctx, gemini.Config{Model: "m", APIKey: "k", BaseURL: url, Retry: noRetry})
	default:
		err = fmt.Errorf("unknown provider %q", provider)
	}
	if err != nil {
		return err
	}
	t, err := tool.Func("t", "Does nothing.", func(context.Context, *tool.Env, struct{}) (string, error) { return "done", nil })
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Config{Model: m, Stream: stream, ResponseLimits: limits, Tools: []tool.Tool{t}})
	if err != nil {
		return err
	}
	saver := checkpoint.NewMemory(0)
	var rep Report
	first, err := a.Invoke(ctx, agent.Prompt("hello"), runner.Checkpoints(saver, "thread"))
	rep.FirstStatus = string(first.Status)
	if err != nil {
		rep.FirstError = err.Error()
	}
	res, err := a.Invoke(ctx, agent.Prompt("go on"), runner.Checkpoints(saver, "thread"))
	if res != nil {
		rep.Status = string(res.Status)
	}
	if err != nil {
		rep.Error = err.Error()
	}
	rep.TooLarge = errors.Is(err, llm.ErrResponseTooLarge)
	var tl *llm.ResponseTooLargeError
	if errors.As(err, &tl) {
		rep.Limit, rep.Wire = tl.Limit, tl.Wire
	}
	cp, err := saver.Get(ctx, checkpoint.Ref{ThreadID: "thread"})
	if err != nil {
		return err
	}
	rep.SavedStatus = string(cp.Status)
	for _, msg := range cp.State.Messages {
		rep.Saved = append(rep.Saved, fmt.Sprintf("%s: %.40s (%d calls)", msg.Role, msg.Content, len(msg.ToolCalls)))
	}
	rep.PeakKB = peakKB()
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// noRetry allows one retry, without waiting: a cut-off answer must not be
// retried, and one that was would show as a third request to the server.
var noRetry = retry.Policy{MaxRetries: 1, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}

// peakKB is the process's peak resident set (VmHWM in /proc/self/status).
func peakKB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return -1
}
