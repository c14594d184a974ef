package checkpoint

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/internal/jsonw"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// Hand-written JSON for the records and writes a saver stores on every step.
//
// encoding/json finds its way through these types by reflection on every
// call, a sizeable share of the CPU a durable step costs. The appenders below
// write the very same bytes json.Marshal writes (field order, omitempty and
// omitzero, sorted map keys, string escaping with HTML escaping, compacted
// raw JSON, RFC 3339 times), so stored data does not change and readers
// stay as they are. Whatever they are unsure of (a time json.Marshal
// refuses, raw JSON they cannot prove valid) makes the caller encode the
// whole value with json.Marshal instead, which then decides, error included.

// fastLayout says whether the types the appenders know still have the
// fields, tags and methods the appenders were written for. A field added to
// one of them later turns the appenders off (everything goes through
// json.Marshal) instead of leaving the field out.
var fastLayout = layoutOf() == knownLayout

// knownLayout is the layout the appenders were written for (see layoutOf).
const knownLayout = `checkpoint.Record{V int "json:\"v\""; ThreadID string "json:\"thread\""; NS string "json:\"ns,omitempty\""; ID string "json:\"id\""; ParentID string "json:\"parent,omitempty\""; Step int "json:\"step\""; Metadata map[string]string "json:\"metadata,omitempty\""; Status checkpoint.Status "json:\"status,omitempty\""; Time time.Time "json:\"time\""; StepUsage llm.Usage "json:\"step_usage\""; Usage llm.Usage "json:\"usage\""; Messages checkpoint.Range "json:\"messages\""; Files map[string]checkpoint.FileRef "json:\"files,omitempty\""; Values map[string]json.RawMessage "json:\"values,omitempty\""; Depth int "json:\"depth\""; Span int "json:\"span,omitempty\""; Snapshot *checkpoint.Snapshot "json:\"snapshot,omitempty\""; Title string "json:\"title,omitempty\""}` +
	`checkpoint.Range{From int64 "json:\"from\""; To int64 "json:\"to\""}` +
	`checkpoint.FileRef{Hash string "json:\"sha256,omitempty\""; Size int64 "json:\"size,omitempty\""; Created time.Time "json:\"created,omitzero\""; Modified time.Time "json:\"modified,omitzero\""; Deleted bool "json:\"deleted,omitempty\""}` +
	`checkpoint.Snapshot{Messages []checkpoint.Range "json:\"messages\""; Files map[string]checkpoint.FileRef "json:\"files,omitempty\""; Values map[string]json.RawMessage "json:\"values,omitempty\""}` +
	`llm.Usage{InputTokens int "json:\"input_tokens\""; OutputTokens int "json:\"output_tokens\""; CachedInputTokens int "json:\"cached_input_tokens,omitempty\""; CacheWriteTokens int "json:\"cache_write_tokens,omitempty\""; ReasoningTokens int "json:\"reasoning_tokens,omitempty\""; Unknown bool "json:\"unknown,omitempty\""}` +
	`checkpoint.writeV1{V int "json:\"v\""; CallID string "json:\"call_id\""; Kind string "json:\"kind\""; Result llm.Message "json:\"result\""; Files vfs.Delta "json:\"files,omitempty\""; Data json.RawMessage "json:\"data,omitempty\""; Time time.Time "json:\"time,omitzero\""}` +
	`llm.Message{Role llm.Role "json:\"role\""; Content string "json:\"content\""; ToolCalls []llm.ToolCall "json:\"tool_calls,omitempty\""; ToolCallID string "json:\"tool_call_id,omitempty\""; Name string "json:\"name,omitempty\""; IsError bool "json:\"is_error,omitempty\""; Parts []llm.Part "json:\"parts,omitempty\""; Extra map[string]json.RawMessage "json:\"extra,omitempty\""}` +
	`llm.ToolCall{ID string "json:\"id\""; Name string "json:\"name\""; Args json.RawMessage "json:\"args\""}` +
	`llm.Part{Type llm.PartType "json:\"type\""; Text string "json:\"text,omitempty\""; Image *llm.Image "json:\"image,omitempty\""; Reasoning *llm.Reasoning "json:\"reasoning,omitempty\""}` +
	`llm.Image{MediaType string "json:\"media_type\""; Data []uint8 "json:\"data,omitempty\""; URL string "json:\"url,omitempty\""}` +
	`llm.Reasoning{Provider string "json:\"provider\""; Signature string "json:\"signature,omitempty\""; Encrypted string "json:\"encrypted,omitempty\""; ID string "json:\"id,omitempty\""; Extra json.RawMessage "json:\"extra,omitempty\""}` +
	`vfs.Change{Path string "json:\"path\""; File *vfs.File "json:\"file,omitempty\""; By string "json:\"by,omitempty\""}` +
	`vfs.File{Content string "json:\"content\""; CreatedAt time.Time "json:\"created_at\""; ModifiedAt time.Time "json:\"modified_at\""}` +
	`marshalers:llm.ToolCall`

// layoutOf describes the fields of every struct the appenders write and
// which of the types involved marshal themselves.
func layoutOf() string {
	structs := []reflect.Type{
		reflect.TypeFor[Record](), reflect.TypeFor[Range](), reflect.TypeFor[FileRef](), reflect.TypeFor[Snapshot](),
		reflect.TypeFor[llm.Usage](), reflect.TypeFor[writeV1](), reflect.TypeFor[llm.Message](), reflect.TypeFor[llm.ToolCall](),
		reflect.TypeFor[llm.Part](), reflect.TypeFor[llm.Image](), reflect.TypeFor[llm.Reasoning](),
		reflect.TypeFor[vfs.Change](), reflect.TypeFor[vfs.File](),
	}
	var sb strings.Builder
	for _, t := range structs {
		sb.WriteString(t.String() + "{")
		for i := range t.NumField() {
			f := t.Field(i)
			if i > 0 {
				sb.WriteString("; ")
			}
			fmt.Fprintf(&sb, "%s %s %q", f.Name, f.Type, string(f.Tag))
		}
		sb.WriteString("}")
	}
	// Types that would encode themselves. Only ToolCall may (its method is
	// mirrored by appendToolCall); time.Time and json.RawMessage are
	// written the way their methods write them.
	marshaler := reflect.TypeFor[json.Marshaler]()
	text := reflect.TypeFor[encoding.TextMarshaler]()
	sb.WriteString("marshalers:")
	others := append(structs, reflect.TypeFor[Status](), reflect.TypeFor[llm.Role](), reflect.TypeFor[llm.PartType](), reflect.TypeFor[vfs.Delta]())
	var own []string
	for _, t := range others {
		if t.Implements(marshaler) || t.Implements(text) ||
			reflect.PointerTo(t).Implements(marshaler) || reflect.PointerTo(t).Implements(text) {
			own = append(own, t.String())
		}
	}
	sb.WriteString(strings.Join(own, ","))
	return sb.String()
}

// encoders holds scratch encoders; the result is copied out, so an
// encoder's buffer is reused by the next encoding.
var encoders = sync.Pool{New: func() any { return &jsonEnc{b: make([]byte, 0, 4096)} }}

// maxPooledBuf is the largest scratch buffer put back into encoders, so
// that one huge record does not pin its memory.
const maxPooledBuf = 1 << 20

// newEnc returns a scratch encoder, or nil when the appenders are off.
func newEnc() *jsonEnc {
	if !fastLayout {
		return nil
	}
	e := encoders.Get().(*jsonEnc)
	e.b, e.bad = e.b[:0], false
	return e
}

// done returns a copy of what e wrote, or ok false when it could not encode
// its value, and gives e back.
func (e *jsonEnc) done() (out []byte, ok bool) {
	if !e.bad {
		out = make([]byte, len(e.b))
		copy(out, e.b)
	}
	ok = !e.bad
	if cap(e.b) <= maxPooledBuf {
		encoders.Put(e)
	}
	return out, ok
}

// jsonEnc appends JSON to b. bad is set when a value cannot be written the
// way json.Marshal would; the caller then falls back to json.Marshal.
type jsonEnc struct {
	b   []byte
	bad bool
}

const hexDigits = "0123456789abcdef"

// str appends s as a JSON string, escaped as json.Marshal escapes it.
func (e *jsonEnc) str(s string) { e.b = jsonw.String(e.b, s) }

// key appends a member name and its colon, after a comma unless first.
func (e *jsonEnc) key(name string, first bool) {
	if !first {
		e.b = append(e.b, ',')
	}
	e.str(name)
	e.b = append(e.b, ':')
}

// lit appends text as it is (a member name known to need no escaping,
// with its quotes and colon).
func (e *jsonEnc) lit(text string) { e.b = append(e.b, text...) }

func (e *jsonEnc) int(v int64) { e.b = strconv.AppendInt(e.b, v, 10) }

func (e *jsonEnc) bool(v bool) {
	if v {
		e.b = append(e.b, "true"...)
	} else {
		e.b = append(e.b, "false"...)
	}
}

// time appends t as time.Time.MarshalJSON writes it: RFC 3339 with
// nanoseconds, in t's own offset. A time MarshalJSON refuses (a year
// outside 0..9999, an offset of a day or more) sets bad.
func (e *jsonEnc) time(t time.Time) {
	e.b = append(e.b, '"')
	b, err := t.AppendText(e.b)
	if err != nil {
		e.bad = true
		return
	}
	e.b = append(b, '"')
}

// raw appends raw JSON compacted as json.Marshal compacts a RawMessage
// (with HTML escaping); nil is null. Raw JSON that is not provably valid
// sets bad.
func (e *jsonEnc) raw(v json.RawMessage) {
	if v == nil {
		e.b = append(e.b, "null"...)
		return
	}
	b, ok := appendCompact(e.b, v, true)
	if !ok {
		e.bad = true
		return
	}
	e.b = b
}

// sortedKeys returns the keys of m in byte order, in buf when it is large
// enough.
func sortedKeys[V any](m map[string]V, buf []string) []string {
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (e *jsonEnc) usage(u *llm.Usage) {
	e.lit(`{"input_tokens":`)
	e.int(int64(u.InputTokens))
	e.lit(`,"output_tokens":`)
	e.int(int64(u.OutputTokens))
	if u.CachedInputTokens != 0 {
		e.lit(`,"cached_input_tokens":`)
		e.int(int64(u.CachedInputTokens))
	}
	if u.CacheWriteTokens != 0 {
		e.lit(`,"cache_write_tokens":`)
		e.int(int64(u.CacheWriteTokens))
	}
	if u.ReasoningTokens != 0 {
		e.lit(`,"reasoning_tokens":`)
		e.int(int64(u.ReasoningTokens))
	}
	if u.Unknown {
		e.lit(`,"unknown":true`)
	}
	e.b = append(e.b, '}')
}

func (e *jsonEnc) rng(r Range) {
	e.lit(`{"from":`)
	e.int(r.From)
	e.lit(`,"to":`)
	e.int(r.To)
	e.b = append(e.b, '}')
}

func (e *jsonEnc) fileRef(f *FileRef) {
	e.b = append(e.b, '{')
	first := true
	if f.Hash != "" {
		e.key("sha256", first)
		e.str(f.Hash)
		first = false
	}
	if f.Size != 0 {
		e.key("size", first)
		e.int(f.Size)
		first = false
	}
	created, createdEnd := -1, -1
	if !f.Created.IsZero() {
		e.key("created", first)
		created = len(e.b)
		e.time(f.Created)
		createdEnd = len(e.b)
		first = false
	}
	if !f.Modified.IsZero() {
		e.key("modified", first)
		if f.Modified == f.Created && created >= 0 {
			e.b = append(e.b, e.b[created:createdEnd]...) // same fields, same text
		} else {
			e.time(f.Modified)
		}
		first = false
	}
	if f.Deleted {
		e.key("deleted", first)
		e.bool(true)
	}
	e.b = append(e.b, '}')
}

// encMap writes m as an object with its keys sorted, each value by val.
func encMap[V any](e *jsonEnc, m map[string]V, val func(V)) {
	if m == nil {
		e.lit("null")
		return
	}
	var buf [16]string
	e.b = append(e.b, '{')
	for i, k := range sortedKeys(m, buf[:]) {
		e.key(k, i == 0)
		val(m[k])
	}
	e.b = append(e.b, '}')
}

func (e *jsonEnc) fileRefs(m map[string]FileRef) { encMap(e, m, func(f FileRef) { e.fileRef(&f) }) }

func (e *jsonEnc) rawMap(m map[string]json.RawMessage) { encMap(e, m, e.raw) }

func (e *jsonEnc) strMap(m map[string]string) { encMap(e, m, e.str) }

// record appends r as json.Marshal writes a Record, with version v.
func (e *jsonEnc) record(r *Record, v int) {
	e.lit(`{"v":`)
	e.int(int64(v))
	e.lit(`,"thread":`)
	e.str(r.ThreadID)
	if r.NS != "" {
		e.lit(`,"ns":`)
		e.str(r.NS)
	}
	e.lit(`,"id":`)
	e.str(r.ID)
	if r.ParentID != "" {
		e.lit(`,"parent":`)
		e.str(r.ParentID)
	}
	e.lit(`,"step":`)
	e.int(int64(r.Step))
	if len(r.Metadata) > 0 {
		e.lit(`,"metadata":`)
		e.strMap(r.Metadata)
	}
	if r.Status != "" {
		e.lit(`,"status":`)
		e.str(string(r.Status))
	}
	e.lit(`,"time":`)
	e.time(r.Time)
	e.lit(`,"step_usage":`)
	e.usage(&r.StepUsage)
	e.lit(`,"usage":`)
	e.usage(&r.Usage)
	e.lit(`,"messages":`)
	e.rng(r.Messages)
	if len(r.Files) > 0 {
		e.lit(`,"files":`)
		e.fileRefs(r.Files)
	}
	if len(r.Values) > 0 {
		e.lit(`,"values":`)
		e.rawMap(r.Values)
	}
	e.lit(`,"depth":`)
	e.int(int64(r.Depth))
	if r.Span != 0 {
		e.lit(`,"span":`)
		e.int(int64(r.Span))
	}
	if s := r.Snapshot; s != nil {
		e.lit(`,"snapshot":{"messages":`)
		if s.Messages == nil {
			e.lit("null")
		} else {
			e.b = append(e.b, '[')
			for i, m := range s.Messages {
				if i > 0 {
					e.b = append(e.b, ',')
				}
				e.rng(m)
			}
			e.b = append(e.b, ']')
		}
		if len(s.Files) > 0 {
			e.lit(`,"files":`)
			e.fileRefs(s.Files)
		}
		if len(s.Values) > 0 {
			e.lit(`,"values":`)
			e.rawMap(s.Values)
		}
		e.b = append(e.b, '}')
	}
	if r.Title != "" {
		e.lit(`,"title":`)
		e.str(r.Title)
	}
	e.b = append(e.b, '}')
}

// message appends m as json.Marshal writes an llm.Message.
func (e *jsonEnc) message(m *llm.Message) {
	e.lit(`{"role":`)
	e.str(string(m.Role))
	e.lit(`,"content":`)
	e.str(m.Content)
	if len(m.ToolCalls) > 0 {
		e.lit(`,"tool_calls":[`)
		for i := range m.ToolCalls {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.toolCall(&m.ToolCalls[i])
		}
		e.b = append(e.b, ']')
	}
	if m.ToolCallID != "" {
		e.lit(`,"tool_call_id":`)
		e.str(m.ToolCallID)
	}
	if m.Name != "" {
		e.lit(`,"name":`)
		e.str(m.Name)
	}
	if m.IsError {
		e.lit(`,"is_error":true`)
	}
	if len(m.Parts) > 0 {
		e.lit(`,"parts":[`)
		for i := range m.Parts {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.part(&m.Parts[i])
		}
		e.b = append(e.b, ']')
	}
	if len(m.Extra) > 0 {
		e.lit(`,"extra":`)
		e.rawMap(m.Extra)
	}
	e.b = append(e.b, '}')
}

// toolCall appends c as llm.ToolCall.MarshalJSON writes it, after the
// compaction with HTML escaping json.Marshal applies to a method's output:
// arguments that are JSON as they are, anything else as a string with
// "args_invalid": true (see llm.EncodeArgs).
func (e *jsonEnc) toolCall(c *llm.ToolCall) {
	e.lit(`{"id":`)
	e.str(c.ID)
	e.lit(`,"name":`)
	e.str(c.Name)
	e.lit(`,"args":`)
	args := c.Args
	if len(args) == 0 {
		e.lit(`null}`)
		return
	}
	if !utf8.Valid(args) {
		args = json.RawMessage(strings.ToValidUTF8(string(args), "\uFFFD"))
	}
	if b, ok := appendCompact(e.b, args, true); ok {
		e.b = append(b, '}')
		return
	}
	if json.Valid(args) {
		e.bad = true // valid after all, but beyond what appendCompact handles
		return
	}
	e.str(string(args))
	e.lit(`,"args_invalid":true}`)
}

func (e *jsonEnc) part(p *llm.Part) {
	e.lit(`{"type":`)
	e.str(string(p.Type))
	if p.Text != "" {
		e.lit(`,"text":`)
		e.str(p.Text)
	}
	if im := p.Image; im != nil {
		e.lit(`,"image":{"media_type":`)
		e.str(im.MediaType)
		if len(im.Data) > 0 {
			e.lit(`,"data":"`)
			e.b = base64.StdEncoding.AppendEncode(e.b, im.Data)
			e.b = append(e.b, '"')
		}
		if im.URL != "" {
			e.lit(`,"url":`)
			e.str(im.URL)
		}
		e.b = append(e.b, '}')
	}
	if r := p.Reasoning; r != nil {
		e.lit(`,"reasoning":{"provider":`)
		e.str(r.Provider)
		if r.Signature != "" {
			e.lit(`,"signature":`)
			e.str(r.Signature)
		}
		if r.Encrypted != "" {
			e.lit(`,"encrypted":`)
			e.str(r.Encrypted)
		}
		if r.ID != "" {
			e.lit(`,"id":`)
			e.str(r.ID)
		}
		if len(r.Extra) > 0 {
			e.lit(`,"extra":`)
			e.raw(r.Extra)
		}
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '}')
}

// write appends w as json.Marshal writes it.
func (e *jsonEnc) write(w *writeV1) {
	e.lit(`{"v":`)
	e.int(int64(w.V))
	e.lit(`,"call_id":`)
	e.str(w.CallID)
	e.lit(`,"kind":`)
	e.str(w.Kind)
	e.lit(`,"result":`)
	e.message(&w.Result)
	if len(w.Files) > 0 {
		e.lit(`,"files":[`)
		for i := range w.Files {
			c := &w.Files[i]
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.lit(`{"path":`)
			e.str(c.Path)
			if f := c.File; f != nil {
				e.lit(`,"file":{"content":`)
				e.str(f.Content)
				e.lit(`,"created_at":`)
				e.time(f.CreatedAt)
				e.lit(`,"modified_at":`)
				e.time(f.ModifiedAt)
				e.b = append(e.b, '}')
			}
			if c.By != "" {
				e.lit(`,"by":`)
				e.str(c.By)
			}
			e.b = append(e.b, '}')
		}
		e.b = append(e.b, ']')
	}
	if len(w.Data) > 0 {
		e.lit(`,"data":`)
		e.raw(w.Data)
	}
	if !w.Time.IsZero() {
		e.lit(`,"time":`)
		e.time(w.Time)
	}
	e.b = append(e.b, '}')
}

// validJSON reports whether v is valid JSON, as json.Valid does, most of
// the time without encoding/json's scanner.
func validJSON(v []byte) bool {
	e := encoders.Get().(*jsonEnc)
	b, ok := appendCompact(e.b[:0], v, false)
	if cap(b) <= maxPooledBuf {
		e.b = b[:0]
		encoders.Put(e)
	}
	return ok || json.Valid(v)
}

// maxCompactDepth is how deeply appendCompact follows nested arrays and
// objects; deeper documents go to encoding/json.
const maxCompactDepth = 64

// appendCompact appends the JSON text src to dst without its insignificant
// white space, as json.Compact does, escaping <, >, & and U+2028/U+2029 in
// strings when escape is set (as json.Marshal does for a RawMessage). It
// checks src on the way and returns ok false, with dst unchanged, when src
// is not valid JSON (or nests more than maxCompactDepth deep); invalid
// UTF-8 in strings passes through, as it does in encoding/json.
func appendCompact(dst, src []byte, escape bool) ([]byte, bool) {
	const (
		wantValue = iota
		afterValue
		wantKey
	)
	var stack [maxCompactDepth]byte
	depth := 0
	orig := len(dst)
	n := len(src)
	i := 0
	state := wantValue
	for {
		for i < n && (src[i] == ' ' || src[i] == '\n' || src[i] == '\r' || src[i] == '\t') {
			i++
		}
		switch state {
		case wantValue:
			if i >= n {
				return dst[:orig], false
			}
			switch c := src[i]; {
			case c == '{' || c == '[':
				dst = append(dst, c)
				i++
				for i < n && (src[i] == ' ' || src[i] == '\n' || src[i] == '\r' || src[i] == '\t') {
					i++
				}
				if i < n && src[i] == c+2 { // '}' is '{'+2, ']' is '['+2
					dst = append(dst, c+2)
					i++
					state = afterValue
					continue
				}
				if depth == len(stack) {
					return dst[:orig], false
				}
				stack[depth] = c
				depth++
				if c == '{' {
					state = wantKey
				}
				continue
			case c == '"':
				var ok bool
				if dst, i, ok = appendCompactString(dst, src, i, escape); !ok {
					return dst[:orig], false
				}
			case c == 't' || c == 'f' || c == 'n':
				word := "null"
				if c == 't' {
					word = "true"
				} else if c == 'f' {
					word = "false"
				}
				if n-i < len(word) || string(src[i:i+len(word)]) != word {
					return dst[:orig], false
				}
				dst = append(dst, word...)
				i += len(word)
			case c == '-' || ('0' <= c && c <= '9'):
				j, ok := scanNumber(src, i)
				if !ok {
					return dst[:orig], false
				}
				dst = append(dst, src[i:j]...)
				i = j
			default:
				return dst[:orig], false
			}
			state = afterValue
		case afterValue:
			if depth == 0 {
				if i != n {
					return dst[:orig], false
				}
				return dst, true
			}
			if i >= n {
				return dst[:orig], false
			}
			top := stack[depth-1]
			switch c := src[i]; {
			case c == ',':
				dst = append(dst, ',')
				i++
				if top == '{' {
					state = wantKey
				} else {
					state = wantValue
				}
			case c == top+2:
				dst = append(dst, c)
				i++
				depth--
			default:
				return dst[:orig], false
			}
		case wantKey:
			if i >= n || src[i] != '"' {
				return dst[:orig], false
			}
			var ok bool
			if dst, i, ok = appendCompactString(dst, src, i, escape); !ok {
				return dst[:orig], false
			}
			for i < n && (src[i] == ' ' || src[i] == '\n' || src[i] == '\r' || src[i] == '\t') {
				i++
			}
			if i >= n || src[i] != ':' {
				return dst[:orig], false
			}
			dst = append(dst, ':')
			i++
			state = wantValue
		}
	}
}

// appendCompactString appends the JSON string starting at src[i] (a quote)
// and returns the index after it.
func appendCompactString(dst, src []byte, i int, escape bool) ([]byte, int, bool) {
	n := len(src)
	start := i
	j := i + 1
	plain := &strPlain
	if escape {
		plain = &strPlainEscaped
	}
	for j < n {
		if plain[src[j]] {
			j++
			continue
		}
		c := src[j]
		switch {
		case c == '"':
			return append(dst, src[start:j+1]...), j + 1, true
		case c == '\\':
			if j+1 >= n {
				return dst, j, false
			}
			switch src[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > n || !isHex(src[j+2]) || !isHex(src[j+3]) || !isHex(src[j+4]) || !isHex(src[j+5]) {
					return dst, j, false
				}
				j += 6
			default:
				return dst, j, false
			}
		case c < 0x20:
			return dst, j, false
		case escape && (c == '<' || c == '>' || c == '&'):
			dst = append(dst, src[start:j]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			j++
			start = j
		case escape && c == 0xE2 && j+2 < n && src[j+1] == 0x80 && src[j+2]&^1 == 0xA8:
			dst = append(dst, src[start:j]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[src[j+2]&0xF])
			j += 3
			start = j
		default:
			j++
		}
	}
	return dst, j, false
}

// strPlain marks the bytes appendCompactString copies without a second
// look: all but control characters, quotes and backslashes;
// strPlainEscaped also leaves out <, >, & and 0xE2 (which starts U+2028
// and U+2029).
var strPlain, strPlainEscaped = func() (plain, escaped [256]bool) {
	for c := 0x20; c < 256; c++ {
		plain[c] = c != '"' && c != '\\'
		escaped[c] = plain[c] && c != '<' && c != '>' && c != '&' && c != 0xE2
	}
	return plain, escaped
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanNumber returns the index after the JSON number starting at src[i].
func scanNumber(src []byte, i int) (int, bool) {
	n := len(src)
	if src[i] == '-' {
		i++
	}
	switch {
	case i < n && src[i] == '0':
		i++
	case i < n && '1' <= src[i] && src[i] <= '9':
		for i < n && '0' <= src[i] && src[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < n && src[i] == '.' {
		i++
		if i >= n || src[i] < '0' || src[i] > '9' {
			return i, false
		}
		for i < n && '0' <= src[i] && src[i] <= '9' {
			i++
		}
	}
	if i < n && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < n && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= n || src[i] < '0' || src[i] > '9' {
			return i, false
		}
		for i < n && '0' <= src[i] && src[i] <= '9' {
			i++
		}
	}
	return i, true
}
