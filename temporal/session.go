package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/tool"
)

// This file pins the calls of stateful tools in one run to one worker: a
// stdio MCP server, a browser or a shell session lives in one worker's
// process, and its later calls must reach the same process.

// SessionTool registers t as Tool does, and pins its calls: in a run, the
// first call of a tool registered this way opens a Temporal session on
// some worker of the task queue, and every later call of such a tool in
// the run goes to that worker, whose process keeps the tool's state. The
// session closes when the run ends. Workers must take sessions
// (worker.Options.EnableSessionWorker).
//
// When the session's worker goes away, the session fails: calls in flight
// fail, and the next call opens a new session on another worker, where the
// tool's state starts afresh; its result says so, so that the model knows
// what it had set up is gone.
func (g *Registry) SessionTool(agentName string, t tool.Tool) tool.Tool {
	return &sessionTool{g.Tool(agentName, t).(*activityTool)}
}

// DefaultSessionTimeout is how long a run's session may stay open when
// Registry.SessionTimeout is zero.
const DefaultSessionTimeout = 24 * time.Hour

// sessionTool is a tool registered with SessionTool.
type sessionTool struct{ *activityTool }

func (st *sessionTool) Run(ctx context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	r, ok := runtimeFrom(ctx)
	if !ok {
		return st.t.Run(ctx, env, args)
	}
	s, fresh, err := r.session(st.g)
	if err != nil {
		return tool.Result{}, fmt.Errorf("no worker could take the session of %s: %w", st.t.Spec().Name, err)
	}
	res, err := st.activityTool.Run(context.WithValue(ctx, sessionKey{}, s), env, args)
	if fresh && r.sess.opened > 1 && err == nil {
		res.Content = "(The worker that held this tool's state went away; this call ran on another worker, where the state starts afresh.)\n" + res.Content
	}
	return res, err
}

type sessionKey struct{}

// sessionFrom is the session a call made in workflow code runs its
// activity in, if any.
func sessionFrom(ctx context.Context) (workflow.Context, bool) {
	s, ok := ctx.Value(sessionKey{}).(workflow.Context)
	return s, ok
}

// sessions is a run's session (SessionTool). A session's blocking calls
// (opening it, completing it) must all run in the coroutine that opened
// it, so one coroutine of its own, the keeper, does both when asked.
type sessions struct {
	sess    workflow.Context // the open session, or nil
	err     error            // why the last opening failed
	opened  int              // how many sessions were opened
	started bool             // the keeper runs
	open    bool             // a session is asked for
	close   bool             // the session is to be completed
	closed  bool             // the keeper is done
}

// session returns the run's open session, having the keeper open one when
// there is none or when the one it had failed; fresh says this call's
// request opened it. Calls that ask at once share one opening.
func (r *Runtime) session(g *Registry) (s workflow.Context, fresh bool, err error) {
	k := &r.sess
	r.wait(func(c workflow.Context) {
		if k.sess != nil && workflow.GetSessionInfo(k.sess).SessionState == workflow.SessionStateOpen {
			s = k.sess
			return
		}
		if !k.started {
			k.started = true
			kc, _ := workflow.NewDisconnectedContext(r.wf)
			workflow.Go(kc, func(c workflow.Context) { r.keep(c, g) })
		}
		before := k.opened
		k.open = true
		_ = workflow.Await(c, func() bool { return !k.open })
		s, err, fresh = k.sess, k.err, k.opened > before
	})
	return s, fresh, err
}

// keep is the keeper coroutine: it opens a session when one is asked for
// (completing a failed one first), and completes the open one when the run
// ends.
func (r *Runtime) keep(c workflow.Context, g *Registry) {
	k := &r.sess
	defer func() { k.closed = true }()
	for {
		_ = workflow.Await(c, func() bool { return k.open || k.close })
		if k.sess != nil && (k.close || workflow.GetSessionInfo(k.sess).SessionState != workflow.SessionStateOpen) {
			workflow.CompleteSession(k.sess)
			k.sess = nil
		}
		if k.close {
			return
		}
		if k.sess == nil {
			timeout := g.SessionTimeout
			if timeout <= 0 {
				timeout = DefaultSessionTimeout
			}
			beat := g.HeartbeatTimeout
			if beat <= 0 {
				beat = 30 * time.Second
			}
			k.sess, k.err = workflow.CreateSession(c, &workflow.SessionOptions{CreationTimeout: time.Minute, ExecutionTimeout: timeout, HeartbeatTimeout: beat})
			if k.err == nil {
				k.opened++
			}
		}
		k.open = false
	}
}

// Close ends what the run holds on workers: the keeper completes its
// session, if it opened one.
func (r *Runtime) Close() {
	k := &r.sess
	if !k.started {
		return
	}
	k.close = true
	c, _ := workflow.NewDisconnectedContext(r.wf)
	_ = workflow.Await(c, func() bool { return k.closed })
}
