package geminitest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

func body(t *testing.T, raw string) *GenerateContentRequest {
	t.Helper()
	b, err := DecodeRequest([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestValidateAcceptsAWellFormedConversation(t *testing.T) {
	b := body(t, `{
		"systemInstruction": {"role": "user", "parts": [{"text": "be nice"}]},
		"contents": [
			{"role": "user", "parts": [{"text": "hi"}]},
			{"role": "model", "parts": [{"text": "", "thoughtSignature": "c2ln"}, {"functionCall": {"id": "1", "name": "ls", "args": {}}}, {"functionCall": {"name": "cat", "args": {"p": "x"}}}]},
			{"role": "user", "parts": [{"functionResponse": {"id": "1", "name": "ls", "response": {"output": "a"}}}, {"functionResponse": {"name": "cat", "response": {"error": "no"}}}, {"text": "and?"}]},
			{"role": "model", "parts": [{"text": "done"}]},
			{"role": "user", "parts": [{"text": "ok"}]}
		],
		"tools": [{"functionDeclarations": [
			{"name": "ls", "parametersJsonSchema": {"type": "object", "properties": {}}},
			{"name": "cat", "parametersJsonSchema": {"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]}}
		]}],
		"toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["cat"]}},
		"generationConfig": {"maxOutputTokens": 10, "temperature": 0.5, "responseMimeType": "application/json", "responseJsonSchema": {"type": "object"}}
	}`)
	if err := Validate(b); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRejects(t *testing.T) {
	user := `{"role": "user", "parts": [{"text": "hi"}]}`
	for _, tc := range []struct {
		name, body, want string
	}{
		{"no contents", `{"contents": []}`, "contents is not specified"},
		{"unknown field", `{"contents": [` + user + `], "system": "x"}`, `Unknown name "system"`},
		{"system role", `{"contents": [` + user + `, {"role": "system", "parts": [{"text": "x"}]}]}`, "belongs in systemInstruction"},
		{"starts with model", `{"contents": [{"role": "model", "parts": [{"text": "x"}]}]}`, "must be a user turn"},
		{"no alternation", `{"contents": [` + user + `, ` + user + `]}`, "roles must alternate"},
		{"empty parts", `{"contents": [{"role": "user", "parts": []}]}`, "must not be empty"},
		{"no data", `{"contents": [{"role": "user", "parts": [{"thoughtSignature": "c2ln"}]}]}`, "exactly one data field, has 0"},
		{"two data", `{"contents": [{"role": "user", "parts": [{"text": "a", "inlineData": {"mimeType": "x", "data": ""}}]}]}`, "has 2"},
		{"bad signature", `{"contents": [` + user + `, {"role": "model", "parts": [{"text": "x", "thoughtSignature": "!!"}]}]}`, "not valid base64"},
		{"call unanswered", `{"contents": [` + user + `, {"role": "model", "parts": [{"functionCall": {"name": "ls"}}]}]}`, "no function response turn follows"},
		{"too few responses", `{"contents": [` + user + `, {"role": "model", "parts": [{"functionCall": {"name": "ls"}}, {"functionCall": {"name": "ls"}}]},
			{"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}]}]}`, "must equal the number of function call parts"},
		{"wrong order", `{"contents": [` + user + `, {"role": "model", "parts": [{"functionCall": {"name": "a"}}, {"functionCall": {"name": "b"}}]},
			{"role": "user", "parts": [{"functionResponse": {"name": "b", "response": {}}}, {"functionResponse": {"name": "a", "response": {}}}]}]}`, `is for "b" but call 0`},
		{"wrong id", `{"contents": [` + user + `, {"role": "model", "parts": [{"functionCall": {"id": "x", "name": "a"}}]},
			{"role": "user", "parts": [{"functionResponse": {"id": "y", "name": "a", "response": {}}}]}]}`, `has id "y" but its call has id "x"`},
		{"stray response", `{"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "a", "response": {}}}]}]}`, "does not follow a model turn"},
		{"call in user turn", `{"contents": [{"role": "user", "parts": [{"functionCall": {"name": "a"}}]}]}`, `functionCall in a "user" turn`},
		{"bad name", `{"contents": [` + user + `], "tools": [{"functionDeclarations": [{"name": "1 bad"}]}]}`, "not a valid function name"},
		{"duplicate", `{"contents": [` + user + `], "tools": [{"functionDeclarations": [{"name": "a"}, {"name": "a"}]}]}`, "declared twice"},
		{"bad schema", `{"contents": [` + user + `], "tools": [{"functionDeclarations": [{"name": "a", "parametersJsonSchema": {"type": 5}}]}]}`, "parametersJsonSchema"},
		{"not object", `{"contents": [` + user + `], "tools": [{"functionDeclarations": [{"name": "a", "parametersJsonSchema": {"type": "string"}}]}]}`, "must describe an object"},
		{"both schemas", `{"contents": [` + user + `], "tools": [{"functionDeclarations": [{"name": "a", "parameters": {"type": "OBJECT"}, "parametersJsonSchema": {"type": "object"}}]}]}`, "mutually exclusive"},
		{"allowed undeclared", `{"contents": [` + user + `], "tools": [{"functionDeclarations": [{"name": "a"}]}], "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["b"]}}}`, "not declared"},
		{"allowed with auto", `{"contents": [` + user + `], "tools": [{"functionDeclarations": [{"name": "a"}]}], "toolConfig": {"functionCallingConfig": {"mode": "AUTO", "allowedFunctionNames": ["a"]}}}`, "only be set with mode ANY"},
		{"schema without mime", `{"contents": [` + user + `], "generationConfig": {"responseJsonSchema": {"type": "object"}}}`, "needs responseMimeType"},
		{"temperature", `{"contents": [` + user + `], "generationConfig": {"temperature": 3}}`, "outside [0, 2]"},
	} {
		b, err := DecodeRequest([]byte(tc.body))
		if err == nil {
			err = Validate(b)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func post(t *testing.T, url string, stream bool, payload string) (*http.Response, string) {
	t.Helper()
	resp, body, err := postE(url, stream, payload)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// postE is post for other goroutines than the test's.
func postE(url string, stream bool, payload string) (*http.Response, string, error) {
	method := "generateContent"
	if stream {
		method = "streamGenerateContent?alt=sse"
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/v1beta/models/m:"+method, strings.NewReader(payload))
	req.Header.Set("x-goog-api-key", "k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func TestServerWireFormat(t *testing.T) {
	srv := NewServer(t, Sequence(
		Reply{Text: "one two three four five six", Calls: []Call{{Name: "a", Args: map[string]any{"x": 1.0}}, {Name: "b"}}},
		Reply{Text: "one two three four five six", Calls: []Call{{Name: "a"}}},
		Fail(429, "slow down"),
	))
	payload := `{"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [{"functionDeclarations": [{"name": "a"}, {"name": "b"}]}]}`

	resp, raw := post(t, srv.URL, false, payload)
	var whole GenerateContentResponse
	if err := json.Unmarshal([]byte(raw), &whole); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	c := whole.Candidates[0]
	if c.FinishReason != "STOP" || c.Content.Role != "model" || len(c.Content.Parts) != 3 || whole.UsageMetadata == nil || whole.ModelVersion != "m" {
		t.Errorf("response = %s", raw)
	}

	resp, raw = post(t, srv.URL, true, payload)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	var chunks []GenerateContentResponse
	sc := bufio.NewScanner(strings.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ch GenerateContentResponse
			if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &ch); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, ch)
		}
	}
	if len(chunks) != 4 { // three text pieces, one call
		t.Fatalf("chunks = %s", raw)
	}
	for i, ch := range chunks {
		want := ""
		if i == len(chunks)-1 {
			want = "STOP"
		}
		if ch.Candidates[0].FinishReason != want || ch.UsageMetadata == nil {
			t.Errorf("chunk %d = %+v", i, ch)
		}
	}
	if !strings.Contains(raw, "\r\n\r\n") {
		t.Error("SSE events should be separated by CRLF CRLF")
	}

	resp, raw = post(t, srv.URL, false, payload)
	var eb ErrorBody
	if err := json.Unmarshal([]byte(raw), &eb); err != nil || resp.StatusCode != 429 || eb.Error.Status != "RESOURCE_EXHAUSTED" || eb.Error.Message != "slow down" || eb.Error.Code != 429 {
		t.Errorf("%d %s", resp.StatusCode, raw)
	}

	resp, raw = post(t, srv.URL, false, payload)
	if resp.StatusCode != 400 || !strings.Contains(raw, "no reply scripted for request 4") {
		t.Errorf("%d %s", resp.StatusCode, raw)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 || !reqs[1].Stream || reqs[0].Stream || reqs[0].APIKey != "k" || reqs[0].Model != "m" {
		t.Errorf("recorded %+v", reqs)
	}
}

func TestServerRejectsInvalidRequestsUnlessLenient(t *testing.T) {
	bad := `{"contents": [{"role": "model", "parts": [{"text": "x"}]}]}`
	srv := NewServer(t, Sequence(Text("ok"), Text("ok")))
	if resp, raw := post(t, srv.URL, false, bad); resp.StatusCode != 400 || !strings.Contains(raw, "INVALID_ARGUMENT") {
		t.Errorf("%d %s", resp.StatusCode, raw)
	}
	lenient := NewServer(t, Sequence(Text("ok")), Lenient())
	if resp, raw := post(t, lenient.URL, false, bad); resp.StatusCode != 200 {
		t.Errorf("%d %s", resp.StatusCode, raw)
	}
	if len(lenient.Invalid()) != 1 {
		t.Errorf("the verdict should still be recorded")
	}
}

// TestRoutesAndTurnsServeConcurrentConversations: parallel conversations
// routed by their first user text each get their own script.
func TestRoutesAndTurnsServeConcurrentConversations(t *testing.T) {
	h := Routes(
		Route{Name: "parent", Match: DeclaresFunction("task"), Handler: Turns(Text("parent 0"), Text("parent 1"))},
		Route{Name: "child", Match: FirstUserContains("research"), Handler: Turns(Text("child 0"), Text("child 1"))},
	)
	srv := NewServer(t, h)
	conv := func(first string, tools bool, turn int) string {
		var contents []string
		contents = append(contents, fmt.Sprintf(`{"role":"user","parts":[{"text":%q}]}`, first))
		for i := 0; i < turn; i++ {
			contents = append(contents, `{"role":"model","parts":[{"text":"x"}]}`, `{"role":"user","parts":[{"text":"more"}]}`)
		}
		decl := ""
		if tools {
			decl = `, "tools": [{"functionDeclarations": [{"name": "task"}]}]`
		}
		return `{"contents": [` + strings.Join(contents, ",") + `]` + decl + `}`
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turn := i % 2
			who, tools, first := "child", false, fmt.Sprintf("research topic %d", i)
			if i%4 < 2 {
				who, tools, first = "parent", true, "do the job"
			}
			_, raw, err := postE(srv.URL, i%3 == 0, conv(first, tools, turn))
			if err != nil {
				errs <- err
				return
			}
			if want := fmt.Sprintf("%s %d", who, turn); !strings.Contains(raw, want) {
				errs <- fmt.Errorf("request %d: want %q in %s", i, want, raw)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	both := Routes(Route{Match: All(FirstUserContains("do"), Not(DeclaresFunction("task")), LastUserContains("job")), Handler: Turns(Text("matched"))})
	r := &Request{}
	if err := json.Unmarshal([]byte(conv("do the job", false, 0)), &r.Body); err != nil {
		t.Fatal(err)
	}
	if got := both(r); got.Text != "matched" {
		t.Errorf("All/Not: %+v", got)
	}
	if _, raw := post(t, srv.URL, false, conv("something else", false, 0)); !strings.Contains(raw, "no route") {
		t.Errorf("unrouted: %s", raw)
	}
}

func TestSplit(t *testing.T) {
	for _, s := range []string{"", "one", "one two", "a b c", "a b c d e f g h i j"} {
		if got := strings.Join(split(s), ""); got != s {
			t.Errorf("split(%q) joins to %q", s, got)
		}
		if n := len(split(s)); n > 3 {
			t.Errorf("split(%q) has %d pieces", s, n)
		}
	}
}

// TestSignatureRules: the fake refuses, with the API's wording, an unknown
// or moved signature, and on Gemini 3 a current-turn call without one; the
// documented placeholder passes; 2.5 accepts unsigned calls.
func TestSignatureRules(t *testing.T) {
	srv := NewServer(t, func(*Request) Reply {
		return Reply{Thought: "plan", ThoughtSignature: []byte("t-sig"), Calls: []Call{{Name: "ls", Signature: []byte("c-sig")}}}
	})
	// Issue the two signatures.
	if resp, raw := post(t, srv.URL, false, `{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}`); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	tSig, cSig := b64([]byte("t-sig")), b64([]byte("c-sig"))
	conv := func(thought, call string) string {
		tp, cp := `{"text": "plan", "thought": true}`, `{"functionCall": {"name": "ls"}}`
		if thought != "" {
			tp = `{"text": "plan", "thought": true, "thoughtSignature": "` + thought + `"}`
		}
		if call != "" {
			cp = `{"functionCall": {"name": "ls"}, "thoughtSignature": "` + call + `"}`
		}
		return `{"contents": [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [` + tp + `, ` + cp + `]},
			{"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"output": "a"}}}]}]}`
	}
	postModel := func(model, payload string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1beta/models/"+model+":generateContent", strings.NewReader(payload))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, model, payload, want string
	}{
		{"as issued", "gemini-3-flash-preview", conv(tSig, cSig), ""},
		{"placeholder", "gemini-3-flash-preview", conv("", "skip_thought_signature_validator"), ""},
		{"missing on 3", "gemini-3-flash-preview", conv(tSig, ""), "Function call is missing a thought_signature in functionCall parts."},
		{"missing on 2.5", "gemini-2.5-flash", conv(tSig, ""), ""},
		{"unknown", "gemini-2.5-flash", conv(tSig, b64([]byte("forged"))), "Corrupted thought signature."},
		{"moved", "gemini-2.5-flash", conv(cSig, tSig), "Corrupted thought signature."},
	} {
		code, raw := postModel(tc.model, tc.payload)
		if tc.want == "" && code != 200 || tc.want != "" && (code != 400 || !strings.Contains(raw, tc.want) || !strings.Contains(raw, "INVALID_ARGUMENT")) {
			t.Errorf("%s: %d %s", tc.name, code, raw)
		}
	}
}

// TestMultimodalFunctionResponses: images in a function response pass on
// Gemini 3 and are refused before it.
func TestMultimodalFunctionResponses(t *testing.T) {
	srv := NewServer(t, func(*Request) Reply { return Text("ok") })
	payload := `{"contents": [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"functionCall": {"name": "read_file"}, "thoughtSignature": "skip_thought_signature_validator"}]},
		{"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"output": "an image"}, "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]}}]}]}`
	for model, want := range map[string]int{"gemini-3-pro-preview": 200, "gemini-2.5-pro": 400} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1beta/models/"+model+":generateContent", strings.NewReader(payload))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d %s", model, resp.StatusCode, b)
		}
	}
}

// TestRepliesWithoutUsageAndRefusals: NoUsage leaves usageMetadata out of
// every chunk; a block reason answers without candidates.
func TestRepliesWithoutUsageAndRefusals(t *testing.T) {
	srv := NewServer(t, Sequence(Reply{Text: "a b c d e f", NoUsage: true}, Reply{Text: "a b c", NoUsage: true},
		Reply{BlockReason: "SAFETY", BlockReasonMessage: "no"}))
	payload := `{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}`
	for _, stream := range []bool{false, true} {
		_, raw := post(t, srv.URL, stream, payload)
		if strings.Contains(raw, "usageMetadata") || !strings.Contains(raw, "candidates") {
			t.Errorf("stream=%v: %s", stream, raw)
		}
	}
	_, raw := post(t, srv.URL, false, payload)
	var r GenerateContentResponse
	if err := json.Unmarshal([]byte(raw), &r); err != nil || r.PromptFeedback == nil || r.PromptFeedback.BlockReason != "SAFETY" ||
		r.PromptFeedback.BlockReasonMessage != "no" || len(r.Candidates) != 0 {
		t.Errorf("%s", raw)
	}
}
