package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/vfs"
)

// SummarizerAgent is the CallInfo agent name of summariser calls (and the
// script key that answers them in replay scenarios).
const SummarizerAgent = "summarizer"

// Long write_file / edit_file arguments in summarised messages are cut to
// their head before the summariser sees them.
const (
	longArg     = 2000
	longArgHead = 20
	argCutNote  = "...(argument truncated)"
)

// maxFocus caps the focus text given to the summariser, in bytes.
const maxFocus = 2000

const summaryPrompt = `You compress the earlier part of a conversation between a user and an AI agent that uses tools, so the agent can carry on without it. Write a summary in these sections:
1. Requests: what the user asked for, in order, and any change of mind.
2. Constraints: rules, limits and preferences the user set, quoted exactly.
3. Facts and decisions: what was found out and decided, and why.
4. Files and artifacts: every path read, written or edited, and what changed in it.
5. Errors: what went wrong and how it was handled.
6. Current state: what was being done when the conversation was cut.
7. Next step: what remains to do.
Keep every path, URL, name, identifier and number exactly as written. You may think inside <analysis> tags first; only the text after them is kept. Reply with the summary only.`

const mergePrompt = `You merge partial summaries of consecutive parts of one conversation (oldest first) into a single summary with the same sections: Requests, Constraints, Facts and decisions, Files and artifacts, Errors, Current state, Next step. Later parts win where they disagree. Keep every path, URL, name, identifier and number exactly as written. Reply with the merged summary only.`

// compactInput is what one compaction works on.
type compactInput struct {
	prior   State
	eff     []llm.Message // the request's messages (after the prior summary was applied)
	raw     []llm.Message // the run's messages
	agent   string
	files   vfs.Backend
	gen     agent.ModelFunc
	trigger string
	before  int
	emit    func(agent.Event)
	state   *agent.State
	// focus is what the person (or a PreCompact hook) asked the summary
	// to keep in detail; empty for none.
	focus string
	// deferHistory leaves the history file to the caller: the state names
	// the file it will be written to.
	deferHistory bool
}

// compact summarises what falls before the keep window of in.eff. It
// returns the new state and the end event's payload (TokensAfter unset).
func (c *compactor) compact(ctx context.Context, in compactInput) (State, *Info, outcome, error) {
	start := 0
	if in.prior.Summary != "" && len(in.eff) > 0 && IsSummary(in.eff[0]) {
		start = 1
	}
	cut := keepFrom(in.eff, start, c.cfg)
	if cut <= start {
		return in.prior, nil, notNeeded, nil
	}
	info := &Info{Trigger: in.trigger, TokensBefore: in.before}
	in.emit(event(EventStart, &Info{Trigger: in.trigger, TokensBefore: in.before}))
	focus, veto := c.preCompact(ctx, in, start, cut)
	if veto != nil {
		info.Error = vetoText(veto)
		return in.prior, info, vetoed, veto
	}
	in.focus = focus
	evicted := shortenArgs(in.eff[start:cut])

	// The summariser's usage rides on the compaction.end event, from which
	// the loop adds it to the run's usage.
	gen := func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		resp, err := in.gen(ctx, req)
		if resp != nil {
			info.Usage = info.Usage.Add(resp.Usage)
		}
		return resp, err
	}
	sum, calls, err := c.summarise(ctx, gen, in.prior.Summary, evicted, in.focus)
	info.SummarizerCalls = calls
	if err == nil {
		var verbatim []string
		sum, verbatim, calls, err = c.gate(ctx, gen, c.capSummary(sum), evicted)
		info.SummarizerCalls += calls
		info.Verbatim = verbatim
	}
	if err != nil {
		info.Error = "the summariser failed, so nothing was compacted: " + err.Error()
		return in.prior, info, failed, err
	}

	// The request's messages after the summary are the run's from the
	// prior cutoff on; without a summary in front they are the run's own.
	base := 0
	if start == 1 {
		base = in.prior.Cutoff
	}
	next := cloneState(in.prior)
	next.Summary = sum
	next.Cutoff = base + (cut - start)
	next.kept = cut
	next.Count++
	next.Evicted += cut - start
	next.Failures = 0
	if next.Session == "" {
		next.Session = sessionID(in.agent, in.raw)
	}
	file := HistoryDir + "/" + next.Session + ".md"
	if in.deferHistory {
		next.File = file
	} else if err := appendHistory(ctx, in.files, file, c.cfg.now(), in.eff[start:cut]); err != nil {
		next.File = ""
		info.Error = fmt.Sprintf("the summarised messages could not be saved to %s: %v", file, err)
	} else {
		next.File = file
	}
	next.Offloaded = offloadedFiles(next.Offloaded, evicted, file)
	if !c.cfg.TodosInTail {
		next.Todos = todoText(in.state)
	}
	info.Cutoff, info.Evicted, info.File = next.Cutoff, cut-start, next.File
	return next, info, compacted, nil
}

// shortenArgs returns msgs with long string arguments of write_file and
// edit_file calls cut to their head.
func shortenArgs(msgs []llm.Message) []llm.Message {
	var out []llm.Message
	for i, m := range msgs {
		for j, c := range m.ToolCalls {
			if (c.Name != "write_file" && c.Name != "edit_file") || len(c.Args) <= longArg {
				continue
			}
			var args map[string]any
			if json.Unmarshal(c.Args, &args) != nil {
				continue
			}
			changed := false
			for k, v := range args {
				if s, ok := v.(string); ok && len(s) > longArg {
					args[k] = clipRunes(s, longArgHead) + argCutNote
					changed = true
				}
			}
			if !changed {
				continue
			}
			b, err := json.Marshal(args)
			if err != nil {
				continue
			}
			if out == nil {
				out = slices.Clone(msgs)
			}
			if &out[i].ToolCalls[0] == &msgs[i].ToolCalls[0] {
				out[i].ToolCalls = slices.Clone(m.ToolCalls)
			}
			out[i].ToolCalls[j].Args = b
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

// clipRunes returns s's first n bytes, not splitting a character.
func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// render writes a message as the summariser and the history file see it.
func render(b *strings.Builder, m llm.Message) {
	fmt.Fprintf(b, "<message role=%s", m.Role)
	if m.Name != "" {
		fmt.Fprintf(b, " name=%s", m.Name)
	}
	if m.ToolCallID != "" {
		fmt.Fprintf(b, " tool_call_id=%s", m.ToolCallID)
	}
	b.WriteString(">\n")
	if t := strings.TrimSpace(m.Content); t != "" {
		b.WriteString(t)
		b.WriteByte('\n')
	}
	for _, p := range m.Parts {
		if p.Type == llm.PartImage {
			b.WriteString("[image]\n")
		}
	}
	for _, c := range m.ToolCalls {
		fmt.Fprintf(b, "<tool_call id=%s name=%s>%s</tool_call>\n", c.ID, c.Name, c.Args)
	}
	b.WriteString("</message>\n")
}

// chunks splits the summariser's input into texts of at most limit
// estimated tokens, breaking only between a tool batch and what follows.
// The previous summary opens the first chunk.
func chunks(prev string, msgs []llm.Message, limit int) []string {
	var out []string
	var cur strings.Builder
	curTok := 0
	if prev != "" {
		cur.WriteString("<previous_summary>\n" + clipTokens(prev, limit) + "\n</previous_summary>\n")
		curTok = tokens.EstimateText(cur.String())
	}
	for i := 0; i < len(msgs); {
		// A group is one message and the tool results that follow it.
		var g strings.Builder
		j := i
		for {
			var mb strings.Builder
			render(&mb, msgs[j])
			g.WriteString(clipTokens(mb.String(), max(limit/4, 64)))
			j++
			if j >= len(msgs) || msgs[j].Role != llm.RoleTool {
				break
			}
		}
		i = j
		text := clipTokens(g.String(), limit)
		t := tokens.EstimateText(text)
		if curTok > 0 && curTok+t > limit {
			out = append(out, cur.String())
			cur.Reset()
			curTok = 0
		}
		cur.WriteString(text)
		curTok += t
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// clipTokens shortens s to about limit estimated tokens, saying so.
func clipTokens(s string, limit int) string {
	if tokens.EstimateText(s) <= limit {
		return s
	}
	// An estimate never falls below a quarter of the bytes, so 3 bytes a
	// token leaves room for the note.
	return clipRunes(s, max(limit*3, 16)) + "\n...(cut here; the full text is in the history file)\n"
}

// summarise asks the summariser for one summary of prev and msgs, in chunks
// that each fit its window, merged by one more call when there are several.
func (c *compactor) summarise(ctx context.Context, gen agent.ModelFunc, prev string, msgs []llm.Message, focus string) (string, int, error) {
	lead := ""
	if focus = strings.TrimSpace(focus); focus != "" {
		focus = clipRunes(focus, maxFocus)
		lead = "Give most room in the summary to what concerns this: " + focus + "\n\n"
	}
	limit := max(c.cfg.chunkTokens()-tokens.EstimateText(summaryPrompt)-tokens.EstimateText(lead)-64, 128)
	parts := chunks(prev, msgs, limit)
	calls := 0
	var sums []string
	for i, p := range parts {
		calls++
		s, err := ask(ctx, gen, summaryPrompt, lead+"Summarise this part of the conversation:\n\n"+p)
		if err != nil {
			return "", calls, fmt.Errorf("part %d of %d: %w", i+1, len(parts), err)
		}
		sums = append(sums, s)
	}
	if len(sums) == 1 {
		return sums[0], calls, nil
	}
	var b strings.Builder
	for i, s := range sums {
		fmt.Fprintf(&b, "<part n=%d>\n%s\n</part>\n", i+1, s)
	}
	calls++
	s, err := ask(ctx, gen, mergePrompt, lead+clipTokens(b.String(), limit))
	if err != nil {
		return "", calls, fmt.Errorf("merging %d parts: %w", len(sums), err)
	}
	return s, calls, nil
}

var analysisBlock = regexp.MustCompile(`(?s)<analysis>.*?</analysis>`)

// ask makes one summariser call and returns its text without any
// <analysis> scratchpad.
func ask(ctx context.Context, gen agent.ModelFunc, system, user string) (string, error) {
	ctx = llm.WithCallInfo(ctx, llm.CallInfo{Agent: SummarizerAgent})
	resp, err := gen(ctx, &llm.Request{System: system, Messages: []llm.Message{llm.User(user)}})
	if err != nil {
		return "", err
	}
	if resp == nil {
		return "", errors.New("the summariser returned no response")
	}
	text := strings.TrimSpace(analysisBlock.ReplaceAllString(resp.Message.Content, ""))
	if text == "" {
		return "", errors.New("the summariser returned an empty summary")
	}
	return text, nil
}

// gate checks that the facts the user gave in msgs are in the summary. It
// asks once more with the list of those missing; what is still missing is
// appended as written under "Verbatim facts".
func (c *compactor) gate(ctx context.Context, gen agent.ModelFunc, sum string, msgs []llm.Message) (string, []string, int, error) {
	var facts []string
	for _, m := range msgs {
		if m.Role == llm.RoleUser && !IsSummary(m) {
			facts = append(facts, Facts(m.Content)...)
		}
	}
	missing := missingFacts(sum, facts)
	if len(missing) == 0 {
		return sum, nil, 0, nil
	}
	var b strings.Builder
	b.WriteString("Here is a summary of a conversation:\n\n<summary>\n" + sum + "\n</summary>\n\n")
	b.WriteString("It leaves out these details the user gave, which must survive exactly as written:\n")
	for _, f := range missing {
		b.WriteString("- " + f + "\n")
	}
	b.WriteString("\nRewrite the summary so it keeps everything it says and also mentions each of these details.")
	again, err := ask(ctx, gen, summaryPrompt, b.String())
	if err != nil {
		return "", nil, 1, fmt.Errorf("asking again for missing details: %w", err)
	}
	again = c.capSummary(again)
	still := missingFacts(again, facts)
	if len(still) == 0 {
		return again, nil, 1, nil
	}
	var v strings.Builder
	v.WriteString(again)
	v.WriteString("\n\nVerbatim facts (from the user's messages, as written):\n")
	for _, f := range still {
		v.WriteString("- " + f + "\n")
	}
	return strings.TrimRight(v.String(), "\n"), still, 1, nil
}

// capSummary keeps a summary to a fifth of the trigger (at least 1,000
// tokens), so that a summariser that writes too much cannot keep the
// request over the trigger.
func (c *compactor) capSummary(s string) string {
	return clipTokens(s, max(c.cfg.Trigger()/5, 1000))
}

func missingFacts(sum string, facts []string) []string {
	var out []string
	for _, f := range facts {
		if !strings.Contains(sum, f) && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// appendHistory adds a section with msgs to the history file at path.
func appendHistory(ctx context.Context, files vfs.Backend, path string, at time.Time, msgs []llm.Message) error {
	if files == nil {
		return errors.New("the run has no filesystem")
	}
	var b strings.Builder
	if e, err := files.Stat(ctx, path); err == nil {
		if e.IsDir {
			return errors.New("it is a directory")
		}
		if e.Size > maxHistoryFile {
			return fmt.Errorf("it is over %d MB", maxHistoryFile>>20)
		}
		old, err := files.Read(ctx, path)
		if err != nil {
			return err
		}
		b.WriteString(old)
		if old != "" && !strings.HasSuffix(old, "\n\n") {
			b.WriteString("\n")
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	fmt.Fprintf(&b, "## Summarized at %s\n\n", at.UTC().Format(time.RFC3339))
	for _, m := range msgs {
		render(&b, m)
	}
	return files.Write(ctx, path, b.String())
}

var offloadedPath = regexp.MustCompile(`/(?:large_tool_results|conversation_history)/[\w.\-/]+`)

// offloadedFiles adds the offloaded files named in msgs to have, keeping
// the newest maxOffloaded and leaving out the history file itself.
func offloadedFiles(have []string, msgs []llm.Message, history string) []string {
	out := slices.Clone(have)
	add := func(text string) {
		for _, p := range offloadedPath.FindAllString(text, -1) {
			p = strings.TrimRight(p, ".-/")
			if p == history || strings.HasSuffix(p, "/") {
				continue
			}
			if i := slices.Index(out, p); i >= 0 {
				out = slices.Delete(out, i, i+1)
			}
			out = append(out, p)
		}
	}
	for _, m := range msgs {
		add(m.Content)
		for _, c := range m.ToolCalls {
			add(string(c.Args))
		}
	}
	if len(out) > maxOffloaded {
		out = out[len(out)-maxOffloaded:]
	}
	return out
}

// todoText renders the run's todo list (state value "todos") for the
// summary message: one line per item when it has the usual shape, else its
// JSON.
func todoText(st *agent.State) string {
	if st == nil {
		return ""
	}
	raw, ok := st.Values["todos"]
	if !ok || len(raw) == 0 {
		return ""
	}
	type item struct {
		Content string `json:"content"`
		Status  string `json:"status"`
	}
	var items []item
	if json.Unmarshal(raw, &items) != nil {
		var wrapped struct {
			Todos []item `json:"todos"`
		}
		if json.Unmarshal(raw, &wrapped) != nil || wrapped.Todos == nil {
			return clipRunes(string(raw), 4000)
		}
		items = wrapped.Todos
	}
	var b strings.Builder
	for _, it := range items {
		mark := "[ ]"
		switch it.Status {
		case "in_progress":
			mark = "[~]"
		case "completed":
			mark = "[x]"
		}
		fmt.Fprintf(&b, "%s %s\n", mark, it.Content)
	}
	return strings.TrimRight(clipRunes(b.String(), 4000), "\n")
}
