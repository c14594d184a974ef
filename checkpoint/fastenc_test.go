package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// gen makes values that exercise every branch of the appenders: strings
// with escapes, HTML characters, U+2028/U+2029 and broken UTF-8, extreme
// integers, zero and far-off times in several zones, raw JSON with white
// space, invalid raw JSON, and nil, empty and large maps and slices.
type gen struct {
	r *rand.Rand
	// deep is set when a value holds raw JSON nested deeper than the
	// appenders follow, the one valid input they hand to encoding/json.
	deep bool
}

var strPieces = []string{
	"", "a", "hello world", "<", ">", "&", "<script>&amp;</script>", "\u2028", "\u2029", "\u2027", "\u202a",
	"\x00", "\x01", "\x1f", "\x7f", "\b", "\f", "\n", "\r", "\t", "\"", "\\", "/", "é", "日本語", "😀",
	"\xff", "\xfe\xfe", "\xe2\x80", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80",
	"\ufffd", "{}", "[1]", "\\u0041", "The quick brown fox jumps over the lazy dog. ", "0123456789abcdefghij",
	"     1\tpackage main // the main package\n", "ordinary text without escapes, long enough for several words",
}

func (g *gen) str() string {
	var sb strings.Builder
	for range g.r.IntN(5) {
		sb.WriteString(strPieces[g.r.IntN(len(strPieces))])
	}
	return sb.String()
}

func (g *gen) int64() int64 {
	switch g.r.IntN(6) {
	case 0:
		return 0
	case 1:
		return math.MaxInt64
	case 2:
		return math.MinInt64
	case 3:
		return -g.r.Int64N(1000)
	default:
		return g.r.Int64()
	}
}

func (g *gen) int() int { return int(g.int64()) }

var zones = []*time.Location{
	time.UTC, time.FixedZone("IST", 5*3600+1800), time.FixedZone("PST", -8*3600), time.FixedZone("odd", 3661),
	time.FixedZone("far", 23*3600+59*60), time.FixedZone("too far", 24*3600), time.FixedZone("", -(24*3600 + 60)),
}

func (g *gen) time() time.Time {
	switch g.r.IntN(8) {
	case 0:
		return time.Time{}
	case 1:
		return time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	case 2:
		return time.Date(9999, 12, 31, 23, 59, 59, 999999999, zones[g.r.IntN(len(zones))])
	case 3:
		return time.Date(10000+g.r.IntN(3), 1, 1, 0, 0, 0, 0, time.UTC) // json.Marshal refuses it
	case 4:
		return time.Date(-1-g.r.IntN(3), 1, 1, 0, 0, 0, 0, time.UTC) // likewise
	default:
		t := time.Unix(g.r.Int64N(4e9), g.r.Int64N(1e9)*int64(g.r.IntN(2)))
		return t.In(zones[g.r.IntN(len(zones))])
	}
}

var rawPieces = []string{
	`null`, `true`, `false`, `0`, `-0`, `1.5e+10`, `-12.75E-3`, `123456789012345678901234567890`, `""`,
	`"a b"`, `"<tag> & co"`, "\"\u2028\u2029\"", `"\u2028 escaped"`, "\"\xff\xfe\"", `"\"\\\/\b\f\n\r\t\u00e9"`,
	` { "a" : [ 1 , 2 ] , "b" : { } , "c" : [ ] } `, "\t[\n\"x\",\r{\"k\":null}]\n", `{"todos":[{"content":"write","status":"in_progress"}]}`,
	// Not JSON: json.Marshal fails on these.
	`{`, `[1,]`, `{"a":}`, `01`, `1.`, `-`, `tru`, `"abc`, "\"a\x01\"", `"\x"`, `"\u12g4"`, `{"a" 1}`, `[1 2]`, `1 2`, `{,}`, `nul`, ``, ` `,
}

func (g *gen) raw() json.RawMessage {
	switch g.r.IntN(12) {
	case 0:
		return nil
	case 1:
		return json.RawMessage{}
	case 2:
		d := 1 + g.r.IntN(maxCompactDepth+10)
		if d > maxCompactDepth {
			g.deep = true
		}
		return json.RawMessage(strings.Repeat("[", d) + strings.Repeat("]", d))
	case 3:
		d := 1 + g.r.IntN(maxCompactDepth+10)
		if d > maxCompactDepth {
			g.deep = true
		}
		return json.RawMessage(strings.Repeat(`{"k":`, d) + g.str2json() + strings.Repeat("}", d))
	default:
		return json.RawMessage(rawPieces[g.r.IntN(len(rawPieces))])
	}
}

// str2json is a generated string as a JSON string literal.
func (g *gen) str2json() string {
	b, _ := json.Marshal(g.str())
	return string(b)
}

func mapOf[V any](g *gen, val func() V) map[string]V {
	switch g.r.IntN(5) {
	case 0:
		return nil
	case 1:
		return map[string]V{}
	}
	n := 1 + g.r.IntN(3)
	if g.r.IntN(4) == 0 {
		n = 10 + g.r.IntN(15) // more keys than sortedKeys keeps on the stack
	}
	m := make(map[string]V, n)
	for i := range n {
		m[g.str()+fmt.Sprint(i%7)] = val()
	}
	return m
}

func (g *gen) fileRef() FileRef {
	return FileRef{Hash: g.str(), Size: g.int64(), Created: g.time(), Modified: g.time(), Deleted: g.r.IntN(2) == 0}
}

func (g *gen) usage() llm.Usage {
	return llm.Usage{InputTokens: g.int(), OutputTokens: g.int(), CachedInputTokens: g.int(), CacheWriteTokens: g.int(),
		ReasoningTokens: g.int(), Unknown: g.r.IntN(2) == 0}
}

func (g *gen) record() *Record {
	r := &Record{
		V: g.int(), ThreadID: g.str(), NS: g.str(), ID: g.str(), ParentID: g.str(), Step: g.int(),
		Metadata: mapOf(g, g.str), Status: Status(g.str()), Time: g.time(), StepUsage: g.usage(), Usage: g.usage(),
		Messages: Range{From: g.int64(), To: g.int64()}, Files: mapOf(g, g.fileRef), Values: mapOf(g, g.raw),
		Depth: g.int(), Title: g.str(),
	}
	if g.r.IntN(2) == 0 {
		s := &Snapshot{Files: mapOf(g, g.fileRef), Values: mapOf(g, g.raw)}
		switch g.r.IntN(3) {
		case 0:
		case 1:
			s.Messages = []Range{}
		default:
			for range 1 + g.r.IntN(4) {
				s.Messages = append(s.Messages, Range{From: g.int64(), To: g.int64()})
			}
		}
		r.Snapshot = s
	}
	return r
}

func (g *gen) message() llm.Message {
	m := llm.Message{Role: llm.Role(g.str()), Content: g.str(), ToolCallID: g.str(), Name: g.str(), IsError: g.r.IntN(2) == 0}
	switch g.r.IntN(3) {
	case 0:
	case 1:
		m.ToolCalls = []llm.ToolCall{}
	default:
		for range 1 + g.r.IntN(3) {
			args := g.raw()
			if g.r.IntN(3) == 0 {
				args = json.RawMessage(g.str()) // often not JSON at all
			}
			m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: g.str(), Name: g.str(), Args: args})
		}
	}
	if g.r.IntN(3) == 0 {
		m.Parts = []llm.Part{}
		for range g.r.IntN(3) {
			p := llm.Part{Type: llm.PartType(g.str()), Text: g.str()}
			if g.r.IntN(2) == 0 {
				p.Image = &llm.Image{MediaType: g.str(), URL: g.str()}
				if g.r.IntN(2) == 0 {
					p.Image.Data = []byte(g.str())
				}
			}
			if g.r.IntN(2) == 0 {
				p.Reasoning = &llm.Reasoning{Provider: g.str(), Signature: g.str(), Encrypted: g.str(), ID: g.str(), Extra: g.raw()}
			}
			m.Parts = append(m.Parts, p)
		}
	}
	if g.r.IntN(3) == 0 {
		m.Extra = mapOf(g, g.raw)
	}
	return m
}

func (g *gen) write() writeV1 {
	w := writeV1{V: g.int(), CallID: g.str(), Kind: g.str(), Result: g.message(), Data: g.raw(), Time: g.time()}
	switch g.r.IntN(3) {
	case 0:
	case 1:
		w.Files = vfs.Delta{}
	default:
		for range 1 + g.r.IntN(3) {
			c := vfs.Change{Path: g.str(), By: g.str()}
			if g.r.IntN(3) > 0 {
				c.File = &vfs.File{Content: g.str(), CreatedAt: g.time(), ModifiedAt: g.time()}
			}
			w.Files = append(w.Files, c)
		}
	}
	return w
}

// checkSame compares what the appender wrote with json.Marshal's output for
// the same value: the same bytes, or both refusing. deep says the value may
// legitimately be handed to encoding/json.
func checkSame(t *testing.T, what string, i int, e *jsonEnc, want []byte, wantErr error, deep bool) (fast bool) {
	t.Helper()
	switch {
	case wantErr != nil && !e.bad:
		t.Fatalf("%s %d: json.Marshal fails (%v) but the appender wrote %s", what, i, wantErr, e.b)
	case wantErr != nil:
	case e.bad && !deep:
		t.Fatalf("%s %d: the appender gave up on a value json.Marshal encodes as %s", what, i, want)
	case !e.bad && !bytes.Equal(e.b, want):
		t.Fatalf("%s %d: appender and json.Marshal differ\n got %s\nwant %s", what, i, e.b, want)
	}
	return !e.bad
}

func TestAppendRecordMatchesJSON(t *testing.T) {
	if !fastLayout {
		t.Fatalf("the appenders are off: the encoded types changed; layout is now\n%s", layoutOf())
	}
	g := &gen{r: rand.New(rand.NewPCG(1, 2))}
	fast, failed := 0, 0
	for i := range 20000 {
		g.deep = false
		r := g.record()
		var e jsonEnc
		e.record(r, r.V)
		want, err := json.Marshal(r)
		if err != nil {
			failed++
		}
		if checkSame(t, "record", i, &e, want, err, g.deep) {
			fast++
		}
		// Encode agrees with json.Marshal whichever way it goes.
		c := *r
		c.V = CodecVersion
		want, err = json.Marshal(&c)
		got, gotErr := Encode(r)
		if (err != nil) != (gotErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("record %d: Encode = %s, %v; json.Marshal = %s, %v", i, got, gotErr, want, err)
		}
	}
	// Both outcomes were exercised many times over.
	if fast < 1000 || failed < 1000 {
		t.Errorf("only %d records encoded and %d refused out of 20000; the generator lost its spread", fast, failed)
	}
}

func TestAppendWriteMatchesJSON(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(3, 4))}
	fast, failed := 0, 0
	for i := range 20000 {
		g.deep = false
		w := g.write()
		var e jsonEnc
		e.write(&w)
		want, err := json.Marshal(w)
		if err != nil {
			failed++
		}
		if checkSame(t, "write", i, &e, want, err, g.deep) {
			fast++
		}
		// A message with parts or extras is stored as JSON: json.Marshal's.
		if len(w.Result.Parts) > 0 || len(w.Result.Extra) > 0 {
			want, err := json.Marshal(w.Result)
			got, gotErr := EncodeMessage(w.Result)
			if (err != nil) != (gotErr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("message %d: EncodeMessage = %s, %v; json.Marshal = %s, %v", i, got, gotErr, want, err)
			}
		}
	}
	if fast < 1000 || failed < 1000 {
		t.Errorf("only %d writes encoded and %d refused out of 20000; the generator lost its spread", fast, failed)
	}
}

// A typical write, as the agent loop stores it, goes through EncodeWrite
// with the same bytes as json.Marshal and reads back.
func TestEncodeWriteTypical(t *testing.T) {
	at := time.Date(2026, 12, 3, 8, 30, 0, 123, time.FixedZone("CET", 3600))
	w := Write{CallID: "call_1", Result: llm.Message{Role: llm.RoleTool, Content: "line 1\nline <2> & \"3\"", ToolCallID: "call_1", Name: "read_file"},
		Files: vfs.Delta{{Path: "/a.md", File: &vfs.File{Content: "x", CreatedAt: at, ModifiedAt: at}}, {Path: "/gone"}},
		Data:  json.RawMessage(` {"k": [1, 2]} `), Time: at}
	got, err := EncodeWrite(w)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"call_id":"call_1","kind":"result","result":{"role":"tool","content":"line 1\nline \u003c2\u003e \u0026 \"3\"","tool_call_id":"call_1","name":"read_file"},` +
		`"files":[{"path":"/a.md","file":{"content":"x","created_at":"2026-12-03T08:30:00.000000123+01:00","modified_at":"2026-12-03T08:30:00.000000123+01:00"}},{"path":"/gone"}],` +
		`"data":{"k":[1,2]},"time":"2026-12-03T07:30:00.000000123Z"}`
	if string(got) != want {
		t.Errorf("EncodeWrite =\n%s\nwant\n%s", got, want)
	}
	back, err := DecodeWrite(got)
	if err != nil || back.Result.Content != w.Result.Content || len(back.Files) != 2 || !back.Time.Equal(at) {
		t.Errorf("DecodeWrite = %+v, %v", back, err)
	}
}

func TestToolCallArgsMatchJSON(t *testing.T) {
	tests := []struct {
		name string
		args string
		want string
	}{
		{"nil", "", `{"id":"c","name":"n","args":null}`},
		{"compacted and escaped", " { \"q\" : \"<a & b>\" } ", `{"id":"c","name":"n","args":{"q":"\u003ca \u0026 b\u003e"}}`},
		{"line separator in a string", "[\"\u2028\"]", `{"id":"c","name":"n","args":["\u2028"]}`},
		{"cut off", `{"q":"abc`, `{"id":"c","name":"n","args":"{\"q\":\"abc","args_invalid":true}`},
		{"broken UTF-8 made valid first", "\"a\xff\xfeb\"", `{"id":"c","name":"n","args":"a` + "\ufffd" + `b"}`},
		{"broken UTF-8 in broken JSON", "{\xff", `{"id":"c","name":"n","args":"{` + "\ufffd" + `","args_invalid":true}`},
	}
	for _, tc := range tests {
		c := llm.ToolCall{ID: "c", Name: "n", Args: json.RawMessage(tc.args)}
		var e jsonEnc
		e.toolCall(&c)
		if e.bad || string(e.b) != tc.want {
			t.Errorf("%s: got %s (bad %v), want %s", tc.name, e.b, e.bad, tc.want)
		}
		m, err := json.Marshal(c)
		if err != nil || string(m) != tc.want {
			t.Errorf("%s: json.Marshal = %s, %v; want %s", tc.name, m, err, tc.want)
		}
	}
}

func TestAppendCompact(t *testing.T) {
	tests := []struct {
		src, plain, escaped string // "" when invalid
	}{
		{` [ 1 , "a b" , { "k" : null } ] `, `[1,"a b",{"k":null}]`, `[1,"a b",{"k":null}]`},
		{`"<&>"`, `"<&>"`, `"\u003c\u0026\u003e"`},
		{"\"\u2028x\u2029\"", "\"\u2028x\u2029\"", `"\u2028x\u2029"`},
		{"\"\xff\"", "\"\xff\"", "\"\xff\""},
		{`-0.5e+10`, `-0.5e+10`, `-0.5e+10`},
		{`{}`, `{}`, `{}`},
		{` [ ] `, `[]`, `[]`},
		{`01`, ``, ``},
		{`1.`, ``, ``},
		{`.5`, ``, ``},
		{`1e`, ``, ``},
		{`[1,]`, ``, ``},
		{`{"a":1,}`, ``, ``},
		{`{"a"}`, ``, ``},
		{`{1:2}`, ``, ``},
		{`[1}`, ``, ``},
		{`{"a":1]`, ``, ``},
		{`truex`, ``, ``},
		{`"\q"`, ``, ``},
		{`"\u00zz"`, ``, ``},
		{"\"\x1f\"", ``, ``},
		{`"abc`, ``, ``},
		{``, ``, ``},
		{`1 2`, ``, ``},
	}
	for _, tc := range tests {
		for _, escape := range []bool{false, true} {
			want := tc.plain
			if escape {
				want = tc.escaped
			}
			got, ok := appendCompact([]byte("prefix"), []byte(tc.src), escape)
			if want == "" {
				if ok || string(got) != "prefix" {
					t.Errorf("appendCompact(%q, %v) = %q, %v; want a refusal", tc.src, escape, got, ok)
				}
				if validJSON([]byte(tc.src)) {
					t.Errorf("validJSON(%q) = true", tc.src)
				}
				continue
			}
			if !ok || string(got) != "prefix"+want {
				t.Errorf("appendCompact(%q, %v) = %q, %v; want %q", tc.src, escape, got, ok, want)
			}
			if !validJSON([]byte(tc.src)) {
				t.Errorf("validJSON(%q) = false", tc.src)
			}
		}
	}
}

// compactReference is what encoding/json makes of src: json.Compact, or
// with escape the compaction json.Marshal applies to a RawMessage.
func compactReference(src []byte, escape bool) ([]byte, error) {
	if escape {
		return json.Marshal(json.RawMessage(src))
	}
	var buf bytes.Buffer
	err := json.Compact(&buf, src)
	return buf.Bytes(), err
}

func FuzzAppendCompactMatchesJSON(f *testing.F) {
	for _, s := range rawPieces {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, src []byte, escape bool) {
		want, err := compactReference(src, escape)
		got, ok := appendCompact(nil, src, escape)
		deep := bytes.Count(src, []byte("["))+bytes.Count(src, []byte("{")) > maxCompactDepth
		if validJSON(src) != json.Valid(src) {
			t.Fatalf("validJSON(%q) = %v, json.Valid says otherwise", src, !json.Valid(src))
		}
		switch {
		case err != nil && ok:
			t.Fatalf("encoding/json refuses %q (%v) but appendCompact wrote %q", src, err, got)
		case err == nil && !ok && !deep:
			t.Fatalf("appendCompact refuses %q, which encoding/json compacts to %q", src, want)
		case ok && !bytes.Equal(got, want):
			t.Fatalf("appendCompact(%q, %v) = %q, encoding/json wrote %q", src, escape, got, want)
		}
	})
}

func FuzzEncodeRecordMatchesJSON(f *testing.F) {
	f.Add("thread-1", "ns#<1>", "id\u2028", "\xff", int64(1733214600), int64(123), int32(3600), []byte(` {"a": [1, "<b>"]} `), int64(-1))
	f.Add("", "", "", "", int64(-62135596800), int64(0), int32(0), []byte(`null`), int64(math.MaxInt64))
	f.Add("t", "", "i", "p", int64(253402300800), int64(5), int32(-86400), []byte(`{`), int64(0))
	f.Fuzz(func(t *testing.T, thread, ns, id, text string, sec, nsec int64, offset int32, value []byte, n int64) {
		at := time.Unix(sec, nsec%1e9).In(time.FixedZone(text, int(offset)))
		r := &Record{
			V: int(n), ThreadID: thread, NS: ns, ID: id, ParentID: text, Step: int(n), Metadata: map[string]string{text: thread, ns: id},
			Status: Status(text), Time: at, StepUsage: llm.Usage{InputTokens: int(n), Unknown: n%2 == 0}, Usage: llm.Usage{ReasoningTokens: int(sec)},
			Messages: Range{From: n, To: sec}, Files: map[string]FileRef{thread: {Hash: id, Size: n, Created: at, Deleted: n%3 == 0}},
			Values: map[string]json.RawMessage{ns: value, id: json.RawMessage(`{"x" : 1}`)}, Depth: int(nsec), Span: int(offset), Title: text,
		}
		if n%2 == 0 {
			r.Snapshot = &Snapshot{Messages: []Range{{From: sec, To: n}}, Files: map[string]FileRef{text: {Modified: at}}, Values: map[string]json.RawMessage{text: value}}
		}
		want, err := json.Marshal(r)
		var e jsonEnc
		e.record(r, r.V)
		deep := bytes.Count(value, []byte("["))+bytes.Count(value, []byte("{")) > maxCompactDepth
		checkSame(t, "record", 0, &e, want, err, deep)
	})
}

func FuzzEncodeWriteMatchesJSON(f *testing.F) {
	f.Add("call_1", "tool", "line <1>\n\u2029 & \"q\"", []byte(`{"path": "/a"}`), "/a.md", int64(1733214600), int32(19800), []byte(` [1] `))
	f.Add("", "", "\xff\xe2\x80", []byte(`{"cut`), "", int64(0), int32(0), []byte(nil))
	f.Fuzz(func(t *testing.T, callID, role, content string, args []byte, path string, sec int64, offset int32, data []byte) {
		at := time.Unix(sec, 0).In(time.FixedZone("z", int(offset)))
		w := writeV1{V: 1, CallID: callID, Kind: role, Time: at, Data: data,
			Result: llm.Message{Role: llm.Role(role), Content: content, ToolCallID: callID, Name: path,
				ToolCalls: []llm.ToolCall{{ID: callID, Name: role, Args: args}}},
			Files: vfs.Delta{{Path: path, File: &vfs.File{Content: content, CreatedAt: at, ModifiedAt: at}}, {Path: content, By: role}},
		}
		if len(content)%2 == 0 {
			w.Result.Parts = []llm.Part{{Type: llm.PartType(role), Text: content, Image: &llm.Image{MediaType: path, Data: args},
				Reasoning: &llm.Reasoning{Provider: role, Signature: callID, Extra: data}}}
			w.Result.Extra = map[string]json.RawMessage{role: args}
		}
		want, err := json.Marshal(w)
		var e jsonEnc
		e.write(&w)
		deep := bytes.Count(args, []byte("["))+bytes.Count(args, []byte("{"))+bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) > maxCompactDepth
		checkSame(t, "write", 0, &e, want, err, deep)
	})
}

// Nesting deeper than appendCompact follows is still judged, and encoded,
// by encoding/json.
func TestDeepRawJSON(t *testing.T) {
	deep := json.RawMessage(strings.Repeat("[", maxCompactDepth+2) + strings.Repeat("]", maxCompactDepth+2))
	if _, ok := appendCompact(nil, deep, false); ok {
		t.Fatal("appendCompact followed nesting deeper than maxCompactDepth")
	}
	if !validJSON(deep) {
		t.Error("validJSON refuses deeply nested JSON")
	}
	r := &Record{ThreadID: "t", ID: "i", Values: map[string]json.RawMessage{"deep": deep}}
	got, err := Encode(r)
	if err != nil || !strings.Contains(string(got), `"values":{"deep":`+string(deep)+`}`) {
		t.Errorf("Encode = %s, %v", got, err)
	}
	if _, err := Encode(&Record{ThreadID: "t", ID: "i", Values: map[string]json.RawMessage{"bad": json.RawMessage(`[`)}}); err == nil {
		t.Error("Encode accepted a value that is not JSON")
	}
}

// The golden files the first codec wrote come out of Encode and
// EncodeWrite byte for byte after a round trip.
func TestGoldenFilesReencode(t *testing.T) {
	for _, name := range []string{"checkpoint_v1_delta.json", "checkpoint_v1_snapshot.json", "write_v1_result.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.TrimSpace(data)
		var got []byte
		if strings.HasPrefix(name, "write") {
			w, err := DecodeWrite(data)
			if err != nil {
				t.Fatal(err)
			}
			got, err = EncodeWrite(w)
			if err != nil {
				t.Fatal(err)
			}
		} else {
			r, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if got, err = Encode(r); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s re-encodes as\n%s\nwant\n%s", name, got, data)
		}
	}
}
