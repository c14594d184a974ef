package checkpoint

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// CodecVersion is the version of the record encoding Encode writes. Decode
// reads every version up to it; records written by older versions load
// forever (golden files under testdata hold one per version).
const CodecVersion = 1

// DefaultSnapshotEvery is how many steps a history runs between snapshots
// unless a saver is told otherwise.
const DefaultSnapshotEvery = 50

// MaxRecordSize caps an encoded record Decode accepts.
const MaxRecordSize = 64 << 20

// Record is the stored form of one checkpoint. It holds what the step
// changed, by reference: its messages as a range of per-namespace message
// sequence numbers, its files as content hashes. A record whose Depth is 0
// carries a Snapshot, the whole state by reference, so rebuilding a state
// reads one snapshot and the deltas after it. Savers store records with
// Encode and share this logic; the messages and file contents they point to
// are stored beside them.
type Record struct {
	V         int                        `json:"v"`
	ThreadID  string                     `json:"thread"`
	NS        string                     `json:"ns,omitempty"`
	ID        string                     `json:"id"`
	ParentID  string                     `json:"parent,omitempty"`
	Step      int                        `json:"step"`
	Metadata  map[string]string          `json:"metadata,omitempty"`
	Status    Status                     `json:"status,omitempty"`
	Time      time.Time                  `json:"time"`
	StepUsage llm.Usage                  `json:"step_usage"`
	Usage     llm.Usage                  `json:"usage"`
	Messages  Range                      `json:"messages"`
	Files     map[string]FileRef         `json:"files,omitempty"`
	Values    map[string]json.RawMessage `json:"values,omitempty"`
	// Depth counts the deltas since the last snapshot; 0 means this record
	// carries one.
	Depth int `json:"depth"`
	// Span, when set, is how many deltas may follow this history's last
	// snapshot before the next, where the saver's own interval would be
	// fewer: a snapshot lists every file, so a state of many files is
	// snapshotted less often (see SnapshotSpan).
	Span     int       `json:"span,omitempty"`
	Snapshot *Snapshot `json:"snapshot,omitempty"`
	// Title is the first user message's text, kept on the first record of
	// a history that has one, for thread listings.
	Title string `json:"title,omitempty"`
}

// Range is the half-open range [From, To) of message sequence numbers.
type Range = msgcodec.Range

// FileRef is one path's state in a record: a content hash with the file's
// times, or a deletion.
type FileRef struct {
	Hash     string    `json:"sha256,omitempty"`
	Size     int64     `json:"size,omitempty"`
	Created  time.Time `json:"created,omitzero"`
	Modified time.Time `json:"modified,omitzero"`
	Deleted  bool      `json:"deleted,omitempty"`
}

// Snapshot is a whole state by reference (see View).
type Snapshot struct {
	Messages []Range                    `json:"messages"`
	Files    map[string]FileRef         `json:"files,omitempty"`
	Values   map[string]json.RawMessage `json:"values,omitempty"`
}

// Hash returns the content hash files are stored under.
func Hash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// Encode encodes r with the current codec version.
func Encode(r *Record) ([]byte, error) {
	c := *r
	c.V = CodecVersion
	return json.Marshal(&c)
}

// Decode decodes a record of any supported version and checks that it is
// consistent, so a damaged row is an error rather than a wrong state.
func Decode(data []byte) (*Record, error) {
	if len(data) > MaxRecordSize {
		return nil, damagedf("checkpoint record is %d bytes; at most %d are read", len(data), MaxRecordSize)
	}
	// A record of a known version decodes in one pass; anything else is
	// looked at twice, for an error that says what is wrong.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err == nil && !dec.More() && r.V >= 1 && r.V <= CodecVersion {
		if err := r.check(); err != nil {
			return nil, damagedf("checkpoint record %q: %w", r.ID, err)
		}
		return &r, nil
	}
	var probe struct {
		V *int `json:"v"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, damagedf("checkpoint record is not valid JSON: %w", err)
	}
	if probe.V == nil {
		return nil, damagedf("checkpoint record has no version field \"v\"")
	}
	if *probe.V < 1 || *probe.V > CodecVersion {
		return nil, fmt.Errorf("checkpoint record has version %d; this build reads versions 1 to %d", *probe.V, CodecVersion)
	}
	dec = json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	r = Record{}
	if err := dec.Decode(&r); err != nil {
		return nil, damagedf("checkpoint record: %w", err)
	}
	if dec.More() {
		return nil, damagedf("checkpoint record has data after its end")
	}
	if err := r.check(); err != nil {
		return nil, damagedf("checkpoint record %q: %w", r.ID, err)
	}
	return &r, nil
}

func (r *Record) check() error {
	if r.ThreadID == "" || r.ID == "" {
		return fmt.Errorf("thread or checkpoint id missing")
	}
	if r.Step < 0 || r.Depth < 0 || r.Span < 0 {
		return fmt.Errorf("negative step, depth or span")
	}
	if r.Messages.From < 0 || r.Messages.To < r.Messages.From {
		return fmt.Errorf("bad message range %d..%d", r.Messages.From, r.Messages.To)
	}
	if (r.Depth == 0) != (r.Snapshot != nil) {
		return fmt.Errorf("depth %d does not match the presence of a snapshot", r.Depth)
	}
	if r.Snapshot != nil {
		for _, m := range r.Snapshot.Messages {
			if m.From < 0 || m.To <= m.From {
				return fmt.Errorf("bad snapshot message range %d..%d", m.From, m.To)
			}
		}
		for p, f := range r.Snapshot.Files {
			if p == "" || f.Deleted || len(f.Hash) != 64 {
				return fmt.Errorf("bad snapshot file %q", p)
			}
		}
	}
	for p, f := range r.Files {
		if p == "" || (!f.Deleted && len(f.Hash) != 64) {
			return fmt.Errorf("bad file reference %q", p)
		}
	}
	for k, v := range r.Values {
		if k == "" || (len(v) > 0 && !json.Valid(v)) {
			return fmt.Errorf("bad value %q", k)
		}
	}
	return nil
}

// View is a state by reference: which messages, file contents and values it
// holds. It is the type a snapshot record stores.
type View = Snapshot

// AddRange appends r to rs, joining it to the last range when they touch.
func AddRange(rs []Range, r Range) []Range {
	if r.Len() <= 0 {
		return rs
	}
	if n := len(rs); n > 0 && rs[n-1].To == r.From {
		rs[n-1].To = r.To
		return rs
	}
	return append(rs, r)
}

// Loader reads the record id of the same thread and namespace; it returns
// an error wrapping ErrNotFound when there is none.
type Loader func(ctx context.Context, id string) (*Record, error)

// Chain returns rec and its ancestors up to and including the nearest
// snapshot, newest first.
func Chain(ctx context.Context, rec *Record, load Loader) ([]*Record, error) {
	chain := []*Record{rec}
	for rec.Depth > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if rec.ParentID == "" {
			return nil, damagedf("checkpoint %q: history broken (no parent before a snapshot)", rec.ID)
		}
		p, err := load(ctx, rec.ParentID)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %q: parent %q: %w", rec.ID, rec.ParentID, err)
		}
		if len(chain) > 1<<20 {
			return nil, damagedf("checkpoint %q: history loops", rec.ID)
		}
		chain = append(chain, p)
		rec = p
	}
	return chain, nil
}

// ViewOf resolves a chain returned by Chain into the state it describes. A
// chain that does not end at a snapshot starts from the empty state.
func ViewOf(chain []*Record) View {
	if len(chain) == 0 {
		return View{Files: map[string]FileRef{}, Values: map[string]json.RawMessage{}}
	}
	snap := chain[len(chain)-1].Snapshot
	if snap == nil {
		chain = append(slices.Clone(chain), &Record{Snapshot: &Snapshot{}})
		snap = chain[len(chain)-1].Snapshot
	}
	v := View{
		Messages: slices.Clone(snap.Messages),
		Files:    maps.Clone(snap.Files),
		Values:   maps.Clone(snap.Values),
	}
	if v.Files == nil {
		v.Files = map[string]FileRef{}
	}
	if v.Values == nil {
		v.Values = map[string]json.RawMessage{}
	}
	for i := len(chain) - 2; i >= 0; i-- {
		r := chain[i]
		v.Messages = AddRange(v.Messages, r.Messages)
		for p, f := range r.Files {
			if f.Deleted {
				delete(v.Files, p)
			} else {
				v.Files[p] = f
			}
		}
		for k, val := range r.Values {
			if isNull(val) {
				delete(v.Values, k)
			} else {
				v.Values[k] = val
			}
		}
	}
	return v
}

// compactValue returns a copy of v without insignificant white space, as
// json.Compact writes it.
func compactValue(v json.RawMessage) (json.RawMessage, error) {
	if bytes.IndexAny(v, " \t\r\n") < 0 {
		// No white space at all (what json.Marshal gives): compact
		// already. Validity is ValidateStep's to check.
		return bytes.Clone(v), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func isNull(v json.RawMessage) bool {
	return len(v) == 0 || string(bytes.TrimSpace(v)) == "null"
}

// Built is what a saver stores for one put: the record, the stored entries
// of its messages (see EncodeMessage) numbered from Record.Messages.From,
// and the file contents by hash.
type Built struct {
	Record   *Record
	Messages [][]byte
	Blobs    map[string][]byte
}

// Build turns a step into a record. parent is the parent's record (nil for
// a new history); parentView is the parent's resolved view, needed only when
// NeedsView(parent, every) says so (the new record is then a snapshot).
// msgFrom is the next free message sequence number of the namespace. s
// has passed ValidateStep (its values are valid JSON).
func Build(s *Step, parent *Record, parentView *View, msgFrom int64, every int) (*Built, error) {
	if every <= 0 {
		every = DefaultSnapshotEvery
	}
	r := &Record{
		V: CodecVersion, ThreadID: s.ThreadID, NS: s.NS, ID: s.ID, ParentID: s.ParentID,
		Step: s.Step, Metadata: maps.Clone(s.Metadata), Status: s.Status, Time: s.Time.UTC(),
		StepUsage: s.Usage, Usage: s.Usage,
		Messages: Range{From: msgFrom, To: msgFrom + int64(len(s.Messages))},
	}
	b := &Built{Record: r, Blobs: map[string][]byte{}, Messages: make([][]byte, 0, len(s.Messages))}
	for _, m := range s.Messages {
		data, err := msgcodec.EncodeMessage(m)
		if err != nil {
			return nil, err
		}
		b.Messages = append(b.Messages, data)
	}
	if len(s.Files) > 0 {
		r.Files = make(map[string]FileRef, len(s.Files))
	}
	for _, c := range s.Files {
		if c.File == nil {
			r.Files[c.Path] = FileRef{Deleted: true}
			continue
		}
		blob := []byte(c.File.Content)
		sum := sha256.Sum256(blob)
		h := hex.EncodeToString(sum[:]) // Hash, without a second copy of the content
		b.Blobs[h] = blob
		r.Files[c.Path] = FileRef{Hash: h, Size: int64(len(c.File.Content)), Created: c.File.CreatedAt.UTC(), Modified: c.File.ModifiedAt.UTC()}
	}
	if len(s.Values) > 0 {
		r.Values = make(map[string]json.RawMessage, len(s.Values))
		for k, v := range s.Values {
			if isNull(v) {
				r.Values[k] = json.RawMessage("null")
			} else {
				c, err := compactValue(v)
				if err != nil {
					return nil, invalid("value %q is not valid JSON", k)
				}
				r.Values[k] = c
			}
		}
	}
	if parent != nil {
		r.Usage = parent.Usage.Add(s.Usage)
		r.Depth = parent.Depth + 1
		r.Span = parent.Span
	}
	if parent == nil || r.Depth >= max(every, parent.Span) {
		base := View{Files: map[string]FileRef{}, Values: map[string]json.RawMessage{}}
		if parent != nil {
			if parentView == nil {
				return nil, fmt.Errorf("checkpoint %q: a snapshot needs its parent's view", s.ID)
			}
			base = *parentView
		}
		v := ViewOf([]*Record{r, {Depth: 0, Snapshot: &base}})
		r.Depth, r.Span = 0, SnapshotSpan(len(v.Files))
		r.Snapshot = &v
		if len(r.Snapshot.Files) == 0 {
			r.Snapshot.Files = nil
		}
		if len(r.Snapshot.Values) == 0 {
			r.Snapshot.Values = nil
		}
		if r.Snapshot.Messages == nil {
			r.Snapshot.Messages = []Range{}
		}
	}
	if parent == nil || parent.Title == "" {
		r.Title = TitleOf(s.Messages)
	}
	return b, nil
}

// NeedsView reports whether Build needs the parent's view: when the new
// record will be a snapshot.
func NeedsView(parent *Record, every int) bool {
	if every <= 0 {
		every = DefaultSnapshotEvery
	}
	return parent != nil && parent.Depth+1 >= max(every, parent.Span)
}

// snapshotFileSteps is what a snapshot's file list may cost a step at
// most, in listed files: a snapshot of n files is followed by at least
// n/snapshotFileSteps deltas.
const snapshotFileSteps = 2

// SnapshotSpan is the Span of a snapshot of n files: the deltas that follow
// it before the next snapshot, when that is more than DefaultSnapshotEvery
// (0 otherwise). So the bytes the snapshots' file lists add stay within
// snapshotFileSteps listed files per step however many files a thread
// keeps, and a state is rebuilt from at most n/2 deltas.
func SnapshotSpan(n int) int {
	if span := n / snapshotFileSteps; span > DefaultSnapshotEvery {
		return span
	}
	return 0
}

// ParentView returns the view of parent that Build needs for the step
// after it (see NeedsView), reading parent's chain through load, or nil
// when Build needs none.
func ParentView(ctx context.Context, parent *Record, every int, load Loader) (*View, error) {
	if !NeedsView(parent, every) {
		return nil, nil
	}
	chain, err := Chain(ctx, parent, load)
	if err != nil {
		return nil, err
	}
	v := ViewOf(chain)
	return &v, nil
}

// MakeSnapshot rewrites rec (whose chain is given) as a snapshot, for a
// prune that drops its ancestors.
func MakeSnapshot(chain []*Record) *Record {
	v := ViewOf(chain)
	r := *chain[0]
	r.Depth, r.Span = 0, SnapshotSpan(len(v.Files))
	r.Snapshot = &v
	if r.Snapshot.Messages == nil {
		r.Snapshot.Messages = []Range{}
	}
	if len(r.Snapshot.Files) == 0 {
		r.Snapshot.Files = nil
	}
	if len(r.Snapshot.Values) == 0 {
		r.Snapshot.Values = nil
	}
	return &r
}

// DeltaRefs lists the content hashes of the files the record's own step
// changed, without its snapshot's. A saver that tracks which records refer
// to which contents may store only these for a record it puts: every file of
// a new snapshot was brought in by an earlier record of the same history,
// which refers to it. Prune must then store Refs for every record it keeps,
// and a copy Refs for every record it copies, since the records that
// brought the files in may be gone.
func (r *Record) DeltaRefs() []string {
	var hs []string
	for _, f := range r.Files {
		if !f.Deleted {
			hs = append(hs, f.Hash)
		}
	}
	slices.Sort(hs)
	return slices.Compact(hs)
}

// Refs lists the content hashes a record refers to.
func (r *Record) Refs() []string {
	var hs []string
	for _, f := range r.Files {
		if !f.Deleted {
			hs = append(hs, f.Hash)
		}
	}
	if r.Snapshot != nil {
		for _, f := range r.Snapshot.Files {
			hs = append(hs, f.Hash)
		}
	}
	slices.Sort(hs)
	return slices.Compact(hs)
}

// Assemble builds a Checkpoint from a record, its view, the stored entries
// of the messages of the view's ranges in order (see EncodeMessage), and the
// contents of its files by hash.
func Assemble(r *Record, v View, msgs [][]byte, blobs map[string][]byte) (*Checkpoint, error) {
	decoded := make([]llm.Message, 0, len(msgs))
	for i, data := range msgs {
		m, err := msgcodec.DecodeMessage(data)
		if err != nil {
			return nil, damagedf("checkpoint %q: message %d does not decode: %w", r.ID, i, err)
		}
		decoded = append(decoded, m)
	}
	return AssembleMessages(r, v, decoded, blobs)
}

// AssembleMessages is Assemble with the messages already decoded (by
// Messages, for a saver that stores chunks).
func AssembleMessages(r *Record, v View, msgs []llm.Message, blobs map[string][]byte) (*Checkpoint, error) {
	c := Header(r)
	c.State.Messages = msgs
	if c.State.Messages == nil {
		c.State.Messages = []llm.Message{}
	}
	c.State.Files = make(map[string]vfs.File, len(v.Files))
	for p, f := range v.Files {
		content, ok := blobs[f.Hash]
		if !ok {
			return nil, damagedf("checkpoint %q: content of %s (sha256 %s) is missing", r.ID, p, f.Hash)
		}
		c.State.Files[p] = vfs.File{Content: string(content), CreatedAt: f.Created, ModifiedAt: f.Modified}
	}
	c.State.Values = v.Values
	return c, nil
}

// Header is a checkpoint without its state, as List returns it.
func Header(r *Record) *Checkpoint {
	return &Checkpoint{
		ThreadID: r.ThreadID, NS: r.NS, ID: r.ID, ParentID: r.ParentID, Step: r.Step,
		Metadata: maps.Clone(r.Metadata), Status: r.Status, Time: r.Time,
		StepUsage: r.StepUsage, Usage: r.Usage,
	}
}

// MatchMetadata reports whether md has every pair of want.
func MatchMetadata(md, want map[string]string) bool {
	for k, v := range want {
		got, ok := md[k]
		if !ok || got != v {
			return false
		}
	}
	return true
}

// MaxTitleLen is the longest title TitleOf returns, in runes.
const MaxTitleLen = 80

// TitleOf returns the first line of the first user message's text,
// shortened to MaxTitleLen runes. The title is valid UTF-8 without NUL
// bytes whatever the message holds (bytes that are not UTF-8 become U+FFFD),
// so that every store can keep it as text.
func TitleOf(msgs []llm.Message) string {
	for _, m := range msgs {
		if m.Role != llm.RoleUser {
			continue
		}
		text := strings.ToValidUTF8(strings.ReplaceAll(m.Content, "\x00", ""), "\uFFFD")
		line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
		line = strings.TrimSpace(line)
		if rs := []rune(line); len(rs) > MaxTitleLen {
			line = string(rs[:MaxTitleLen-1]) + "…"
		}
		if line != "" {
			return line
		}
	}
	return ""
}

// EncodeWrite and DecodeWrite are the stored form of a pending write.
func EncodeWrite(w Write) ([]byte, error) {
	if w.Kind == "" {
		w.Kind = KindResult
	}
	w.Time = w.Time.UTC()
	x := writeV1{V: CodecVersion, CallID: w.CallID, Kind: w.Kind, Result: w.Result, Files: w.Files, Data: w.Data, Time: w.Time}
	return json.Marshal(x)
}

// DecodeWrite decodes what EncodeWrite wrote.
func DecodeWrite(data []byte) (Write, error) {
	var x writeV1
	if err := json.Unmarshal(data, &x); err != nil {
		return Write{}, damagedf("pending write does not decode: %w", err)
	}
	if x.V < 1 || x.V > CodecVersion {
		return Write{}, fmt.Errorf("pending write has version %d; this build reads versions 1 to %d", x.V, CodecVersion)
	}
	if x.CallID == "" || x.Kind == "" {
		return Write{}, damagedf("pending write has no call id or kind")
	}
	return Write{CallID: x.CallID, Kind: x.Kind, Result: x.Result, Files: x.Files, Data: x.Data, Time: x.Time}, nil
}

type writeV1 struct {
	V      int             `json:"v"`
	CallID string          `json:"call_id"`
	Kind   string          `json:"kind"`
	Result llm.Message     `json:"result"`
	Files  vfs.Delta       `json:"files,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
	Time   time.Time       `json:"time,omitzero"`
}

// ValidateWrite checks a pending write before it is stored.
func ValidateWrite(ref Ref, w *Write) error {
	if err := ValidateRef(ref, true); err != nil {
		return err
	}
	if err := validID("call id", w.CallID, MaxIDLen); err != nil {
		return err
	}
	if w.Kind != "" {
		if err := validID("write kind", w.Kind, MaxIDLen); err != nil {
			return err
		}
	}
	if len(w.Data) > 0 && !json.Valid(w.Data) {
		return invalid("data of the write for call %q is not valid JSON", w.CallID)
	}
	return nil
}

// PrunePlan is what Prune does to a thread whose records, in put order, were
// given to PlanPrune: drop the records whose Drop flag is set, replace the
// ones in Rewrite (survivors whose parent goes, now snapshots), and keep only
// the messages in Keep (by namespace) and the contents the survivors refer to.
type PrunePlan struct {
	Drop    []bool
	Rewrite map[int]*Record
	Keep    map[string][]Range
}

// PlanPrune plans a prune over a thread's records given in put order.
func PlanPrune(ctx context.Context, recs []*Record, opts PruneOptions) (*PrunePlan, error) {
	p := &PrunePlan{Drop: make([]bool, len(recs)), Rewrite: map[int]*Record{}, Keep: map[string][]Range{}}
	if opts.Before != "" {
		cut := slices.IndexFunc(recs, func(r *Record) bool { return r.ID == opts.Before })
		if cut < 0 {
			return nil, fmt.Errorf("%w: checkpoint %q", ErrNotFound, opts.Before)
		}
		for i := range cut {
			p.Drop[i] = true
		}
	}
	if opts.KeepLast > 0 {
		seen := map[string]int{}
		for i := len(recs) - 1; i >= 0; i-- {
			seen[recs[i].NS]++
			if seen[recs[i].NS] > opts.KeepLast {
				p.Drop[i] = true
			}
		}
	}
	byKey := map[nsID]*Record{}
	kept := map[nsID]bool{}
	for i, r := range recs {
		byKey[nsID{r.NS, r.ID}] = r
		if !p.Drop[i] {
			kept[nsID{r.NS, r.ID}] = true
		}
	}
	for i, r := range recs {
		if p.Drop[i] {
			continue
		}
		if r.Depth != 0 && !kept[nsID{r.NS, r.ParentID}] {
			ns := r.NS
			chain, err := Chain(ctx, r, func(_ context.Context, id string) (*Record, error) {
				if x := byKey[nsID{ns, id}]; x != nil {
					return x, nil
				}
				return nil, fmt.Errorf("%w: checkpoint %q", ErrNotFound, id)
			})
			if err != nil {
				return nil, err
			}
			r = MakeSnapshot(chain)
			p.Rewrite[i] = r
		}
		p.Keep[r.NS] = append(p.Keep[r.NS], r.Messages)
		if r.Snapshot != nil {
			p.Keep[r.NS] = append(p.Keep[r.NS], r.Snapshot.Messages...)
		}
	}
	for ns, rs := range p.Keep {
		p.Keep[ns] = MergeRanges(rs)
	}
	return p, nil
}

// MergeRanges sorts ranges and joins those that touch or overlap, dropping
// empty ones.
func MergeRanges(rs []Range) []Range {
	rs = slices.DeleteFunc(slices.Clone(rs), func(r Range) bool { return r.Len() <= 0 })
	slices.SortFunc(rs, func(a, b Range) int { return cmp.Compare(a.From, b.From) })
	var out []Range
	for _, r := range rs {
		if n := len(out); n > 0 && r.From <= out[n-1].To {
			out[n-1].To = max(out[n-1].To, r.To)
			continue
		}
		out = append(out, r)
	}
	return out
}

// PlanCopy returns which of a thread's records (in put order) CopyThread
// copies for src (see Saver.CopyThread).
func PlanCopy(recs []*Record, src Ref) ([]bool, error) {
	keep := make([]bool, len(recs))
	at := -1
	for i, r := range recs {
		if r.NS == src.NS && (src.ID == "" || r.ID == src.ID) {
			at = i
		}
	}
	if at < 0 {
		return nil, fmt.Errorf("%w: thread %q namespace %q checkpoint %q", ErrNotFound, src.ThreadID, src.NS, src.ID)
	}
	if src.ID == "" {
		for i := range keep {
			keep[i] = true
		}
		return keep, nil
	}
	idx := map[string]int{}
	for i, r := range recs {
		if r.NS == src.NS {
			idx[r.ID] = i
		}
	}
	for i := at; ; {
		keep[i] = true
		j, ok := idx[recs[i].ParentID]
		if recs[i].ParentID == "" || !ok {
			break
		}
		i = j
	}
	for i := 0; i <= at; i++ {
		if recs[i].NS != src.NS {
			keep[i] = true
		}
	}
	return keep, nil
}
