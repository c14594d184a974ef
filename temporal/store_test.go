package temporal_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/protobuf/proto"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/postgres"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/internal/pgtest"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// sizing is a data converter that remembers the largest payload it made.
type sizing struct {
	converter.DataConverter
	mu    sync.Mutex
	max   int
	count int
}

func (s *sizing) note(ps ...*commonpb.Payload) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ps {
		s.count++
		s.max = max(s.max, proto.Size(p))
	}
}

func (s *sizing) ToPayload(v any) (*commonpb.Payload, error) {
	p, err := s.DataConverter.ToPayload(v)
	if err == nil {
		s.note(p)
	}
	return p, err
}

func (s *sizing) ToPayloads(vs ...any) (*commonpb.Payloads, error) {
	ps, err := s.DataConverter.ToPayloads(vs...)
	if err == nil {
		s.note(ps.GetPayloads()...)
	}
	return ps, err
}

func openStore(t *testing.T) *sqlite.Saver {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "threads.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// bigText is n bytes of text that compresses poorly, different per seed.
func bigText(seed string, n int) string {
	var b strings.Builder
	h := sha256.Sum256([]byte(seed))
	for b.Len() < n {
		b.WriteString(hex.EncodeToString(h[:]))
		h = sha256.Sum256(h[:])
	}
	return b.String()[:n]
}

// A 200-round thread whose tool returns 10 KB each round (2 MB of messages
// in the end) keeps every payload under 64 KB: the model activity carries
// a reference to the stored step and the messages since, and the step
// records are local activities whose inputs are no payloads.
func TestLongThreadPayloadsStaySmall(t *testing.T) {
	const rounds = 200
	var steps []scripted.Step
	for i := range rounds {
		steps = append(steps, step("", scripted.StepCall{ID: fmt.Sprintf("c%d", i), Name: "fetch", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}))
	}
	steps = append(steps, step("read it all"), step("still here"))
	reg := temporal.NewRegistry()
	reg.Store = openStore(t)
	m := reg.Model("scripted", scripted.New(scripted.Script{"reader": {Steps: steps}}, scripted.Options{}))
	fetch := reg.Tool("reader", tool.MustFunc("fetch", "Fetch a page.", func(_ context.Context, _ *tool.Env, in struct {
		N int `json:"n"`
	}) (string, error) {
		return bigText(fmt.Sprint(in.N), 10<<10), nil
	}))
	a, err := agent.New(agent.Config{Name: "reader", Model: m, Tools: []tool.Tool{fetch}, MaxSteps: rounds + 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("reader", a); err != nil {
		t.Fatal(err)
	}
	dc := &sizing{DataConverter: temporal.DataConverter()}
	run := func(input string) temporal.Summary {
		t.Helper()
		env := newEnv(t, reg)
		env.SetDataConverter(dc)
		env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "reader", Thread: "long", Input: input})
		s := *summary(t, env)
		return s
	}
	if s := run("read"); s.Status != agent.StatusOK || s.Rounds != rounds+1 || s.Text != "read it all" {
		t.Fatalf("summary %+v", s)
	}
	// A second turn opens the thread, 2 MB of messages, in pieces.
	if s := run("still there?"); s.Status != agent.StatusOK || s.Text != "still here" {
		t.Fatalf("second turn: %+v", s)
	}
	if dc.max >= 64<<10 {
		t.Errorf("largest payload %d bytes, want under 64 KB", dc.max)
	}
	t.Logf("%d payloads, largest %d bytes", dc.count, dc.max)
	cp, err := reg.Store.Get(context.Background(), checkpoint.Ref{ThreadID: "long"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cp.State.Messages); n != 2*rounds+4 {
		t.Errorf("the store holds %d messages, want %d", n, 2*rounds+4)
	}
}

// A model call whose reference does not rebuild its messages (the store
// holds other messages than the workflow saved) fails with a clear error
// rather than sending the model something else.
func TestModelReferenceMismatchIsRefused(t *testing.T) {
	reg := temporal.NewRegistry()
	store := openStore(t)
	reg.Store = store
	m := reg.Model("scripted", scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{step("", tc("note", `{}`)), step("done")}}}, scripted.Options{}))
	if err := reg.Agent("parent", mustAgent(t, agent.Config{Model: m, Tools: []tool.Tool{noteTool}})); err != nil {
		t.Fatal(err)
	}
	// A first turn, so that a thread is stored.
	env := newEnv(t, reg)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "T", Input: "go"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	cp, err := store.Get(context.Background(), checkpoint.Ref{ThreadID: "T"})
	if err != nil {
		t.Fatal(err)
	}
	req := cp.State.Messages
	var suite testsuite.WorkflowTestSuite
	aenv := suite.NewTestActivityEnvironment()
	aenv.SetDataConverter(temporal.DataConverter())
	aenv.RegisterActivityWithOptions(reg.CallModel, activity.RegisterOptions{Name: temporal.ModelActivity})
	_, err = aenv.ExecuteActivity(temporal.ModelActivity, temporal.ModelCall{Model: "scripted",
		Request: &llm.Request{}, Ref: &temporal.MessagesRef{Thread: "T", Step: cp.ID, Prefix: len(req), Hash: strings.Repeat("0", 64)}})
	if err == nil || !strings.Contains(err.Error(), "not those of the model call") {
		t.Fatalf("err = %v, want a mismatch", err)
	}
}

func mustAgent(t *testing.T, c agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A thread starts on a laptop (runner.Checkpoints on a SQLite file), is
// cut off in the middle of a step, is resumed as a RunAgent workflow on
// the same file, which stops waiting for an approval, and is finished on
// the laptop again: one thread, one transcript, and no finished call ran
// twice.
func TestLaptopWorkerLaptop(t *testing.T) {
	laptopWorkerLaptop(t, openStore(t), inTestEnv(t))
}

// The same on PostgreSQL, the store of a server fronting a fleet (skipped
// unless DEEPAGENTS_TEST_POSTGRES names a server).
func TestLaptopWorkerLaptopOnPostgres(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	store, err := postgres.Open(t.Context(), dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	laptopWorkerLaptop(t, store, inTestEnv(t))
}

// inTestEnv runs a workflow in the SDK's test environment.
func inTestEnv(t *testing.T) func(reg *temporal.Registry, in temporal.RunInput) temporal.Summary {
	return func(reg *temporal.Registry, in temporal.RunInput) temporal.Summary {
		env := newEnv(t, reg)
		env.ExecuteWorkflow(temporal.RunAgentWorkflow, in)
		s := *summary(t, env)
		return s
	}
}

// laptopWorkerLaptop is TestLaptopWorkerLaptop with the worker's part run
// by onWorker.
// laptopCase is the agent of TestLaptopWorkerLaptop on a registry over
// store, and what its tools did.
type laptopCase struct {
	reg *temporal.Registry
	a   *agent.Agent

	mu         sync.Mutex
	effects    map[string]int // effect calls that ran, by call id
	halts      map[string]int // halt calls that finished
	stopLaptop func()         // set while the laptop's first run goes on
}

func newLaptopCase(t *testing.T, store checkpoint.RunStore) *laptopCase {
	t.Helper()
	lc := &laptopCase{effects: map[string]int{}, halts: map[string]int{}}
	reg := temporal.NewRegistry()
	reg.Store = store
	// The workflow ends at the approval wait: the laptop takes the
	// decision.
	reg.ApprovalTimeout = -1
	lc.reg = reg
	m := reg.Model("scripted", scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		step("", scripted.StepCall{ID: "e1", Name: "effect", Args: json.RawMessage(`{}`)}, scripted.StepCall{ID: "h1", Name: "halt", Args: json.RawMessage(`{}`)}),
		step("", scripted.StepCall{ID: "e2", Name: "effect", Args: json.RawMessage(`{}`)}, scripted.StepCall{ID: "w1", Name: "write", Args: json.RawMessage(`{"path":"/w.txt","content":"w"}`)}),
		step("all done"),
	}}}, scripted.Options{}))

	effect := reg.Tool("parent", tool.MustFunc("effect", "Has an effect.", func(_ context.Context, env *tool.Env, _ struct{}) (string, error) {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		lc.effects[env.CallID]++
		return "did " + env.CallID, nil
	}))
	// An activity too: a tool in workflow code runs again on replay, so
	// only pure tools belong there.
	halt := reg.Tool("parent", tool.MustFunc("halt", "Stops the laptop.", func(ctx context.Context, env *tool.Env, _ struct{}) (string, error) {
		lc.mu.Lock()
		stop := lc.stopLaptop
		lc.mu.Unlock()
		if stop != nil {
			// The laptop is cut off once effect's result is saved.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				cp, err := store.Get(context.Background(), checkpoint.Ref{ThreadID: "T"})
				if err == nil && len(cp.Pending) > 0 && cp.Pending[0].CallID == "e1" {
					break
				}
			}
			stop()
			<-ctx.Done()
			return "", ctx.Err()
		}
		lc.mu.Lock()
		lc.halts[env.CallID]++
		lc.mu.Unlock()
		return "halted", nil
	}))
	gates := map[string]approve.Policy{"write": {}}
	a := mustAgent(t, agent.Config{Name: "parent", Model: m, Tools: []tool.Tool{effect, halt, writeTool}, Middleware: []agent.Middleware{approve.Gate(gates)}})
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	lc.a = a
	return lc

}

func laptopWorkerLaptop(t *testing.T, store checkpoint.RunStore, onWorker func(reg *temporal.Registry, in temporal.RunInput) temporal.Summary) {
	t.Helper()
	lc := newLaptopCase(t, store)
	reg, a := lc.reg, lc.a
	mu, effects, halts := &lc.mu, lc.effects, lc.halts

	// On the laptop: cut off in the middle of the first step.
	ctx, cancel := context.WithCancel(context.Background())
	mu.Lock()
	lc.stopLaptop = cancel
	mu.Unlock()
	res, _ := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(store, "T"))
	mu.Lock()
	lc.stopLaptop = nil
	mu.Unlock()
	if res != nil && res.Status == agent.StatusOK {
		t.Fatalf("the laptop's run was not cut off: %+v", res.Status)
	}

	// On a worker: resumed, it stops waiting for the write's approval.
	if s := onWorker(reg, temporal.RunInput{Agent: "parent", Thread: "T"}); s.Status != agent.StatusInterrupted {
		t.Fatalf("the worker's run: %+v", s)
	}

	// On the laptop again: approved, the run ends.
	res, err := a.Invoke(context.Background(), agent.Input{}, runner.Checkpoints(store, "T"),
		agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusOK || res.FinalText() != "all done" {
		t.Fatalf("the last run: %s %q", res.Status, res.FinalText())
	}
	mu.Lock()
	defer mu.Unlock()
	if effects["e1"] != 1 || effects["e2"] != 1 || len(effects) != 2 {
		t.Errorf("effects ran %v, want e1 and e2 once each", effects)
	}
	if halts["h1"] != 1 {
		t.Errorf("halt finished %v times, want once", halts["h1"])
	}
	rs, err := runner.LoadRunState(context.Background(), store, "T", agent.Path{{Name: "parent"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	var transcript []string
	for _, msg := range rs.Messages {
		line := string(msg.Role)
		if msg.ToolCallID != "" {
			line += ":" + msg.ToolCallID
		}
		for _, c := range msg.ToolCalls {
			line += " " + c.ID
		}
		transcript = append(transcript, line)
	}
	want := []string{"user", "assistant e1 h1", "tool:e1", "tool:h1", "assistant e2 w1", "tool:e2", "tool:w1", "assistant"}
	if strings.Join(transcript, "|") != strings.Join(want, "|") {
		t.Errorf("transcript %v, want %v", transcript, want)
	}
	if _, ok := rs.Files["/w.txt"]; !ok {
		t.Errorf("files %v, want /w.txt", rs.Files)
	}
}

// The parallel delegation on a thread: each subagent records into its own
// namespace of the thread, and the summary is the one without a store.
func TestDelegationOnAThread(t *testing.T) {
	reg, _ := delegation(t, 0)
	store := openStore(t)
	reg.Store = store
	env := newEnv(t, reg)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "D", Input: "go"})
	s := *summary(t, env)
	if s.Status != agent.StatusOK || s.Text != "all done" || strings.Join(s.Files, ",") != "/a.txt,/b.txt,/p.txt" || len(s.Children) != 2 {
		t.Fatalf("summary %+v", s)
	}
	cps, err := store.List(context.Background(), checkpoint.ListOptions{ThreadID: "D", AllNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	ns := map[string]bool{}
	for _, cp := range cps {
		ns[cp.NS] = true
	}
	if len(ns) != 3 {
		t.Errorf("namespaces %v, want the parent's and two subagents'", ns)
	}
	rs, err := runner.LoadRunState(context.Background(), store, "D", agent.Path{{Name: "parent"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Status != agent.StatusOK || len(rs.Finished) != 2 {
		t.Errorf("saved run: %s, %d finished subagents", rs.Status, len(rs.Finished))
	}
}

// A thread held by another process (a CLI run) is refused by the
// workflow, as a second CLI run would be; once the workflow ends, it lets
// the thread go.
func TestWorkflowTakesTheLease(t *testing.T) {
	store := openStore(t)
	reg := temporal.NewRegistry()
	reg.Store = store
	m := reg.Model("scripted", scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{step("done")}}}, scripted.Options{}))
	if err := reg.Agent("parent", mustAgent(t, agent.Config{Model: m})); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	laptop := runner.LeaseHolder()
	if _, err := store.Acquire(ctx, "T", laptop, time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	run := func() temporal.Summary {
		t.Helper()
		env := newEnv(t, reg)
		env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "T", Input: "go"})
		s := *summary(t, env)
		return s
	}
	if s := run(); s.Status != agent.StatusError || !strings.Contains(s.Error, "is in use by "+laptop) {
		t.Fatalf("on a held thread: %s %q", s.Status, s.Error)
	}
	if err := store.Release(ctx, "T", laptop); err != nil {
		t.Fatal(err)
	}
	if s := run(); s.Status != agent.StatusOK {
		t.Fatalf("on a free thread: %s %q", s.Status, s.Error)
	}
	if _, err := store.Acquire(ctx, "T", laptop, time.Now(), time.Minute); err != nil {
		t.Fatalf("the workflow kept the thread: %v", err)
	}
}

// The committed history of a workflow that resumed a laptop's thread
// (TestLaptopWorkerLaptopOnADevServer) replays: the store's local
// activities are markers, not run again. A worker without a store takes
// other steps, and the replay says so: every worker of a task queue must
// be given a store, or none.
func TestThreadHistoryReplays(t *testing.T) {
	replay := func(store checkpoint.RunStore) error {
		lc := newLaptopCase(t, openStore(t))
		lc.reg.Store = store
		return replayerOf(t, lc.reg).ReplayWorkflowHistoryFromJSONFile(nil, threadHistory)
	}
	if err := replay(openStore(t)); err != nil {
		t.Fatalf("%s does not replay: %v", threadHistory, err)
	}
	if err := replay(nil); err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("without a store the history replayed with %v, want a nondeterminism error (TMPRL1100)", err)
	}
}

// renewals is a store that counts lease renewals, and refuses them once
// lose is set (another process took the thread).
type renewals struct {
	*sqlite.Saver
	mu   sync.Mutex
	n    int
	lose bool
}

func (r *renewals) Renew(ctx context.Context, thread, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	r.mu.Lock()
	r.n++
	lose := r.lose
	r.mu.Unlock()
	if lose {
		return checkpoint.Lease{}, checkpoint.ErrNotHeld
	}
	return r.Saver.Renew(ctx, thread, holder, now, ttl)
}

// While a tool runs for two minutes, the workflow renews its lease every
// 20 seconds on a workflow timer, and with every step it records; a
// renewal refused (the thread taken over) ends the run before it writes.
func TestWorkflowRenewsTheLease(t *testing.T) {
	for _, lose := range []bool{false, true} {
		store := &renewals{Saver: openStore(t), lose: lose}
		reg := temporal.NewRegistry()
		reg.Store = store
		m := reg.Model("scripted", scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{step("", tc("slow", `{}`)), step("done")}}}, scripted.Options{}))
		slow := reg.Tool("parent", tool.MustFunc("slow", "Takes long.", func(context.Context, *tool.Env, struct{}) (string, error) { return "slow", nil }))
		if err := reg.Agent("parent", mustAgent(t, agent.Config{Model: m, Tools: []tool.Tool{slow}})); err != nil {
			t.Fatal(err)
		}
		env := newEnv(t, reg)
		env.OnActivity(temporal.ToolActivity, mock.Anything, mock.Anything).After(2*time.Minute).Return(&temporal.ToolOutcome{Result: tool.Result{Content: "slow"}}, nil)
		env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "T", Input: "go"})
		s := *summary(t, env)
		store.mu.Lock()
		n := store.n
		store.mu.Unlock()
		switch {
		case !lose && (s.Status != agent.StatusOK || n < 5):
			t.Errorf("%s %q after %d renewals, want ok after 6", s.Status, s.Error, n)
		case lose && (s.Status == agent.StatusOK || !strings.Contains(s.Error, "lost thread") && !strings.Contains(s.Error, "lease not held") || n != 1):
			t.Errorf("%s %q after %d renewals, want the thread lost at the first", s.Status, s.Error, n)
		}
	}
}

// The approval wait on a thread in the store: a workflow whose wait
// timed out ends interrupted, and a new workflow on the thread resumes it,
// waits again, and takes the decisions by update to the end; the store
// holds the run as finished.
func TestApprovalOnAThread(t *testing.T) {
	store := openStore(t)
	reg := approvalRegistry(t)
	reg.Store = store
	reg.ApprovalTimeout = time.Hour
	run := func(in temporal.RunInput, decisions func(env *testsuite.TestWorkflowEnvironment, waiting []agent.Interrupt) *outcome) (temporal.Summary, *outcome) {
		t.Helper()
		env := newEnv(t, reg)
		var o *outcome
		if decisions != nil {
			env.RegisterDelayedCallback(func() { o = decisions(env, pending(t, env)) }, time.Minute)
		}
		env.ExecuteWorkflow(temporal.RunAgentWorkflow, in)
		s := *summary(t, env)
		return s, o
	}
	first, _ := run(temporal.RunInput{Agent: "parent", Thread: "A", Input: "go"}, nil)
	if first.Status != agent.StatusInterrupted || len(first.Interrupts) != 2 {
		t.Fatalf("first workflow: %+v", first)
	}
	second, o := run(temporal.RunInput{Agent: "parent", Thread: "A"}, func(env *testsuite.TestWorkflowEnvironment, waiting []agent.Interrupt) *outcome {
		if len(waiting) != 2 {
			t.Errorf("the resumed run waits on %v", callIDs(waiting))
			return nil
		}
		return decide(env, []agent.Decision{{Type: agent.Approve, CallID: "w1"}, {Type: agent.Approve, CallID: "w2", Path: waiting[1].Path}})
	})
	if o == nil || !o.done || o.refused != nil {
		t.Fatalf("decisions: %+v", o)
	}
	if second.Status != agent.StatusOK || strings.Join(second.Files, ",") != "/a.txt,/p.txt" {
		t.Fatalf("second workflow: %+v", second)
	}
	rs, err := runner.LoadRunState(context.Background(), store, "A", agent.Path{{Name: "parent"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Status != agent.StatusOK || len(rs.Files) != 2 {
		t.Errorf("the stored run: %s, files %v", rs.Status, rs.Files)
	}
}
