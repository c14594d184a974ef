package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/providers/retry"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// attempts counts the model activity's attempts and when each started, on
// the test environment's clock.
type attempts struct {
	mu     sync.Mutex
	starts []time.Time
}

func (a *attempts) listen(env *testsuite.TestWorkflowEnvironment) {
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == temporal.ModelActivity {
			a.mu.Lock()
			a.starts = append(a.starts, env.Now())
			a.mu.Unlock()
		}
	})
}

func (a *attempts) gaps() []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(a.starts); i++ {
		out = append(out, a.starts[i].Sub(a.starts[i-1]))
	}
	return out
}

// failing is a scripted model whose first calls fail with the errors of
// fail (by call number, from 1; nil passes the call on), and which records
// whether each call was marked as retried by its caller.
func failing(fail func(n int) error) (llm.Model, func() (calls int, byCaller bool)) {
	var mu sync.Mutex
	n, marked := 0, true
	m := onCall{Model: scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{step("done")}}}, scripted.Options{}),
		hook: func(ctx context.Context, _ llm.CallInfo) error {
			mu.Lock()
			defer mu.Unlock()
			n++
			marked = marked && retry.RetriedByCaller(ctx)
			return fail(n)
		}}
	return m, func() (int, bool) { mu.Lock(); defer mu.Unlock(); return n, marked }
}

// retryRun runs the agent of model m as the traced workflow and returns
// its summary, its events and the model activity's attempts.
func retryRun(t *testing.T, reg *temporal.Registry, m llm.Model, mw ...agent.Middleware) (*traced, *attempts) {
	t.Helper()
	a, err := agent.New(agent.Config{Model: m, Middleware: mw})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, reg)
	var at attempts
	at.listen(env)
	env.RegisterWorkflowWithOptions(tracedWorkflow(map[string]*agent.Agent{"parent": a}), workflow.RegisterOptions{Name: "traced"})
	env.ExecuteWorkflow("traced", temporal.RunInput{Agent: "parent", Input: "hi"})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out traced
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return &out, &at
}

// A rate limit is retried by Temporal, not by the provider: each activity
// attempt calls the model once, the next attempt starts after the
// provider's Retry-After (not the policy's one second), the run succeeds
// on the third attempt, and the run's events tell of the two retries
// before the response.
func TestModelActivityRetriesARateLimitAfterRetryAfter(t *testing.T) {
	reg := temporal.NewRegistry()
	m, seen := failing(func(n int) error {
		if n <= 2 {
			return &llm.APIError{Kind: llm.ErrKindRateLimit, Provider: "p", StatusCode: 429, Message: "slow down", RetryAfter: 7 * time.Second}
		}
		return nil
	})
	out, at := retryRun(t, reg, reg.Model("scripted", m))
	if out.Summary.Status != agent.StatusOK || out.Summary.Text != "done" {
		t.Fatalf("summary %+v", out.Summary)
	}
	calls, byCaller := seen()
	if calls != 3 || !byCaller {
		t.Errorf("the model was called %d times (want 3, one per attempt), marked as retried by its caller: %v", calls, byCaller)
	}
	if g := at.gaps(); len(g) != 2 || g[0] != 7*time.Second || g[1] != 7*time.Second {
		t.Errorf("the attempts started %v apart, want 7s (Retry-After) twice", g)
	}
	var retries []int
	var kinds []string
	for _, ev := range events(t, out.Events) {
		switch ev.Type {
		case agent.ModelRetry:
			retries = append(retries, ev.Retry.Attempt)
			if !strings.Contains(ev.Retry.Error, "Temporal retried it") {
				t.Errorf("retry event %+v", ev.Retry)
			}
		case agent.ModelResponse:
			if len(retries) != 2 {
				t.Errorf("the response came before the retries: %v", retries)
			}
		}
		kinds = append(kinds, string(ev.Type))
	}
	if len(retries) != 2 || retries[0] != 1 || retries[1] != 2 {
		t.Errorf("retry events %v in %v, want attempts 1 and 2", retries, kinds)
	}
}

// A Retry-After longer than the policy's maximum interval waits that
// interval; without one, the policy's backoff applies.
func TestModelActivityRetryAfterIsCappedByThePolicy(t *testing.T) {
	reg := temporal.NewRegistry()
	reg.ModelRetry = &sdktemporal.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 3, MaximumInterval: 30 * time.Second, MaximumAttempts: 4}
	m, _ := failing(func(n int) error {
		switch n {
		case 1:
			return &llm.APIError{Kind: llm.ErrKindRateLimit, StatusCode: 429, RetryAfter: time.Hour}
		case 2, 3:
			return &llm.APIError{Kind: llm.ErrKindServer, StatusCode: 503}
		}
		return nil
	})
	out, at := retryRun(t, reg, reg.Model("scripted", m))
	if out.Summary.Status != agent.StatusOK {
		t.Fatalf("summary %+v", out.Summary)
	}
	if g := at.gaps(); len(g) != 3 || g[0] != 30*time.Second || g[1] != 6*time.Second || g[2] != 18*time.Second {
		t.Errorf("the attempts started %v apart, want 30s (the cap), then 6s and 18s (the policy's backoff)", g)
	}
}

// A bad request, or any error that is not a provider's retryable one, is
// not retried: one attempt, and the run fails with the provider's error
// kind intact in workflow code.
func TestModelActivityDoesNotRetryABadRequest(t *testing.T) {
	for name, fail := range map[string]error{
		"400":   &llm.APIError{Kind: llm.ErrKindBadRequest, Provider: "p", StatusCode: 400, Message: "no such field"},
		"other": errors.New("the script is broken"),
	} {
		t.Run(name, func(t *testing.T) {
			reg := temporal.NewRegistry()
			m, seen := failing(func(int) error { return fail })
			var got error
			out, at := retryRun(t, reg, reg.Model("scripted", m), agent.Middleware{WrapModel: func(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
				resp, err := next(ctx, req)
				got = err
				return resp, err
			}})
			if calls, _ := seen(); calls != 1 || len(at.gaps()) != 0 {
				t.Errorf("%d calls, %d attempts", calls, len(at.gaps())+1)
			}
			if out.Summary.Status != agent.StatusError {
				t.Errorf("summary %+v", out.Summary)
			}
			var ae *llm.APIError
			if name == "400" && (!errors.Is(got, llm.ErrBadRequest) || !errors.As(got, &ae) || ae.StatusCode != 400 || ae.Message != "no such field") {
				t.Errorf("the middleware saw %#v", got)
			}
			if name == "other" && (got == nil || !strings.Contains(got.Error(), "the script is broken")) {
				t.Errorf("the middleware saw %v", got)
			}
		})
	}
}

// A server error on every attempt ends after the policy's attempts, with
// the error's kind intact in workflow code.
func TestModelActivityGivesUpAfterThePolicysAttempts(t *testing.T) {
	reg := temporal.NewRegistry()
	reg.ModelRetry = &sdktemporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3}
	m, seen := failing(func(int) error {
		return &llm.APIError{Kind: llm.ErrKindServer, Provider: "p", StatusCode: 503, Message: "overloaded"}
	})
	var got error
	out, _ := retryRun(t, reg, reg.Model("scripted", m), agent.Middleware{WrapModel: func(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
		resp, err := next(ctx, req)
		got = err
		return resp, err
	}})
	if calls, _ := seen(); calls != 3 {
		t.Errorf("%d calls, want 3", calls)
	}
	if out.Summary.Status != agent.StatusError || !errors.Is(got, llm.ErrServer) {
		t.Errorf("summary %+v, error %v", out.Summary, got)
	}
}

// retrying is a model that calls the provider the way every provider
// adapter does, through retry.Do with its default policy (three retries):
// inside the model activity that loop makes one attempt, and Temporal
// retries the activity.
type retrying struct {
	llm.Model
	mu    sync.Mutex
	sends int
	waits *retry.Recorder
}

func (r *retrying) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return retry.Do(ctx, retry.Policy{Sleep: r.waits.Sleep}, func(ctx context.Context) (*llm.Response, error) {
		r.mu.Lock()
		r.sends++
		n := r.sends
		r.mu.Unlock()
		if n <= 2 {
			return nil, &llm.APIError{Kind: llm.ErrKindServer, StatusCode: 500, RetryAfter: 3 * time.Second}
		}
		return r.Model.Generate(ctx, req)
	})
}

func TestProviderRetriesAreOffInsideTheActivity(t *testing.T) {
	reg := temporal.NewRegistry()
	m := &retrying{Model: scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{step("done")}}}, scripted.Options{}), waits: &retry.Recorder{}}
	out, at := retryRun(t, reg, reg.Model("scripted", m))
	if out.Summary.Status != agent.StatusOK {
		t.Fatalf("summary %+v", out.Summary)
	}
	if w := m.waits.Waits(); len(w) != 0 {
		t.Errorf("the provider's retry loop waited %v inside the activity", w)
	}
	if g := at.gaps(); m.sends != 3 || len(g) != 2 || g[0] != 3*time.Second {
		t.Errorf("%d sends, attempts %v apart: want 3 sends, one per activity attempt, 3s apart", m.sends, g)
	}
	// Outside a workflow the same model retries on its own.
	m.sends = 0
	_, _ = m.Generate(context.Background(), &llm.Request{})
	if m.sends != 3 || len(m.waits.Waits()) != 2 {
		t.Errorf("outside a workflow: %d sends, waits %v; want the provider's own retries", m.sends, m.waits.Waits())
	}
}

// flakyReads is a store whose reads from the model activity (the messages
// of a reference) fail with err, the first fails times.
type flakyReads struct {
	*sqlite.Saver
	mu    sync.Mutex
	fails int
	err   error
	reads int
}

func (f *flakyReads) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Checkpoint, error) {
	if activity.IsActivity(ctx) && activity.GetInfo(ctx).ActivityType.Name == temporal.ModelActivity {
		f.mu.Lock()
		f.reads++
		fail := f.reads <= f.fails
		f.mu.Unlock()
		if fail {
			return nil, f.err
		}
	}
	return f.Saver.Get(ctx, ref)
}

// A model activity that cannot read its messages back from the store is
// retried while the store is unavailable, and not when the step is not
// there; a store unavailable through every attempt stops the run
// unfinished.
func TestModelActivityRetriesAnUnavailableStore(t *testing.T) {
	for _, c := range []struct {
		name   string
		fails  int
		err    error
		reads  int
		status agent.Status
		match  error
	}{
		{"unavailable once", 1, fmt.Errorf("db restarting: %w", checkpoint.ErrUnavailable), 3, agent.StatusOK, nil}, // the first call twice, the second once
		{"unavailable always", 100, fmt.Errorf("db down: %w", checkpoint.ErrUnavailable), 6, agent.StatusError, agent.ErrRecorderUnavailable},
		{"not found", 100, checkpoint.ErrNotFound, 1, agent.StatusError, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := &flakyReads{Saver: openStore(t), fails: c.fails, err: c.err}
			reg := temporal.NewRegistry()
			reg.Store = store
			m := reg.Model("scripted", scripted.New(echoes(1), scripted.Options{}))
			var got error
			a := mustAgent(t, agent.Config{Model: m, Tools: []tool.Tool{reg.Tool("parent", echoTool)}, Middleware: []agent.Middleware{{WrapModel: func(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
				resp, err := next(ctx, req)
				got = err
				return resp, err
			}}}})
			if err := reg.Agent("parent", a); err != nil {
				t.Fatal(err)
			}
			env := newEnv(t, reg)
			env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "T", Input: "go"})
			s := summary(t, env)
			store.mu.Lock()
			reads := store.reads
			store.mu.Unlock()
			if s.Status != c.status || reads != c.reads {
				t.Fatalf("%s %q after %d reads, want %s after %d", s.Status, s.Error, reads, c.status, c.reads)
			}
			if c.match != nil && !errors.Is(got, c.match) {
				t.Errorf("the model call failed with %v, want it to match %v", got, c.match)
			}
		})
	}
}
