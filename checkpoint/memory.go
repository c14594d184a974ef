package checkpoint

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Memory is a Saver that keeps everything in memory: for tests, and the
// default when no database is configured. It stores the same encoded records
// as the database savers, so it exercises the same codec.
type Memory struct {
	every int

	mu      sync.Mutex
	seq     int64
	threads map[string]*memThread
	blobs   map[string][]byte
}

type memThread struct {
	cps    []*memCP // in put order
	byKey  map[nsID]*memCP
	msgs   map[string]map[int64][]byte // ns → seq → message
	next   map[string]int64            // ns → next message seq
	writes map[nsID]map[[2]string][]byte
	lease  *Lease
}

type nsID struct{ ns, id string }

type memCP struct {
	seq int64
	rec *Record
	raw []byte
}

// NewMemory returns an empty in-memory saver that takes a snapshot every
// snapshotEvery steps (DefaultSnapshotEvery when 0).
func NewMemory(snapshotEvery int) *Memory {
	if snapshotEvery <= 0 {
		snapshotEvery = DefaultSnapshotEvery
	}
	return &Memory{every: snapshotEvery, threads: map[string]*memThread{}, blobs: map[string][]byte{}}
}

// find returns the checkpoint ref names (the namespace's latest when ref.ID
// is empty) and its thread. Callers hold m.mu.
func (m *Memory) find(ref Ref) (*memThread, *memCP, error) {
	th := m.thread(ref.ThreadID, false)
	var cp *memCP
	if th != nil {
		if ref.ID == "" {
			cp = th.latest(ref.NS)
		} else {
			cp = th.byKey[nsID{ref.NS, ref.ID}]
		}
	}
	if cp == nil {
		return nil, nil, fmt.Errorf("%w: thread %q namespace %q checkpoint %q", ErrNotFound, ref.ThreadID, ref.NS, ref.ID)
	}
	return th, cp, nil
}

func (m *Memory) thread(id string, create bool) *memThread {
	th := m.threads[id]
	if th == nil && create {
		th = &memThread{byKey: map[nsID]*memCP{}, msgs: map[string]map[int64][]byte{}, next: map[string]int64{}, writes: map[nsID]map[[2]string][]byte{}}
		m.threads[id] = th
	}
	return th
}

func (th *memThread) loader(ns string) Loader {
	return func(_ context.Context, id string) (*Record, error) {
		cp := th.byKey[nsID{ns, id}]
		if cp == nil {
			return nil, fmt.Errorf("%w: checkpoint %q", ErrNotFound, id)
		}
		return cp.rec, nil
	}
}

// Put implements Saver.
func (m *Memory) Put(ctx context.Context, s Step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateStep(&s); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	th := m.thread(s.ThreadID, false)
	if th != nil && th.byKey[nsID{s.NS, s.ID}] != nil {
		return nil
	}
	var parent *Record
	var view *View
	if s.ParentID != "" {
		if th == nil || th.byKey[nsID{s.NS, s.ParentID}] == nil {
			return fmt.Errorf("%w: parent checkpoint %q of %q in thread %q", ErrNotFound, s.ParentID, s.ID, s.ThreadID)
		}
		parent = th.byKey[nsID{s.NS, s.ParentID}].rec
		var err error
		if view, err = ParentView(ctx, parent, m.every, th.loader(s.NS)); err != nil {
			return err
		}
	}
	if th == nil {
		th = m.thread(s.ThreadID, true)
	}
	b, err := Build(&s, parent, view, th.next[s.NS], m.every)
	if err != nil {
		return err
	}
	raw, err := Encode(b.Record)
	if err != nil {
		return err
	}
	if th.msgs[s.NS] == nil {
		th.msgs[s.NS] = map[int64][]byte{}
	}
	for i, msg := range b.Messages {
		th.msgs[s.NS][b.Record.Messages.From+int64(i)] = msg
	}
	th.next[s.NS] = b.Record.Messages.To
	for h, c := range b.Blobs {
		if _, ok := m.blobs[h]; !ok {
			m.blobs[h] = c
		}
	}
	m.seq++
	cp := &memCP{seq: m.seq, rec: b.Record, raw: raw}
	th.cps = append(th.cps, cp)
	th.byKey[nsID{s.NS, s.ID}] = cp
	return nil
}

// PutWrite implements Saver.
func (m *Memory) PutWrite(ctx context.Context, ref Ref, w Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateWrite(ref, &w); err != nil {
		return err
	}
	data, err := EncodeWrite(w)
	if err != nil {
		return err
	}
	if w.Kind == "" {
		w.Kind = KindResult
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	th := m.thread(ref.ThreadID, false)
	key := nsID{ref.NS, ref.ID}
	if th == nil || th.byKey[key] == nil {
		return fmt.Errorf("%w: checkpoint %q in thread %q", ErrNotFound, ref.ID, ref.ThreadID)
	}
	if th.writes[key] == nil {
		th.writes[key] = map[[2]string][]byte{}
	}
	th.writes[key][[2]string{w.CallID, w.Kind}] = data
	return nil
}

func (th *memThread) latest(ns string) *memCP {
	for i := len(th.cps) - 1; i >= 0; i-- {
		if th.cps[i].rec.NS == ns {
			return th.cps[i]
		}
	}
	return nil
}

// Get implements Saver.
func (m *Memory) Get(ctx context.Context, ref Ref) (*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidateRef(ref, false); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	th, cp, err := m.find(ref)
	if err != nil {
		return nil, err
	}
	chain, err := Chain(ctx, cp.rec, th.loader(ref.NS))
	if err != nil {
		return nil, err
	}
	v := ViewOf(chain)
	var msgs [][]byte
	for _, r := range v.Messages {
		for s := r.From; s < r.To; s++ {
			data, ok := th.msgs[ref.NS][s]
			if !ok {
				return nil, fmt.Errorf("checkpoint %q: message %d is missing", cp.rec.ID, s)
			}
			msgs = append(msgs, data)
		}
	}
	blobs := map[string][]byte{}
	for _, f := range v.Files {
		if c, ok := m.blobs[f.Hash]; ok {
			blobs[f.Hash] = c
		}
	}
	c, err := Assemble(cp.rec, v, msgs, blobs)
	if err != nil {
		return nil, err
	}
	if ws := th.writes[nsID{ref.NS, cp.rec.ID}]; len(ws) > 0 {
		if c.Pending, err = sortedWrites(ws); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// List implements Saver.
func (m *Memory) List(ctx context.Context, opts ListOptions) ([]Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckListOptions(opts); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	th := m.thread(opts.ThreadID, false)
	if th == nil {
		if opts.Before != "" {
			return nil, fmt.Errorf("%w: checkpoint %q in thread %q", ErrNotFound, opts.Before, opts.ThreadID)
		}
		return nil, nil
	}
	end := len(th.cps)
	if opts.Before != "" {
		end = -1
		for i, cp := range th.cps {
			if cp.rec.ID == opts.Before {
				end = i
				break
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("%w: checkpoint %q in thread %q", ErrNotFound, opts.Before, opts.ThreadID)
		}
	}
	var out []Checkpoint
	for i := end - 1; i >= 0; i-- {
		r := th.cps[i].rec
		if !opts.AllNamespaces && r.NS != opts.NS {
			continue
		}
		if !MatchMetadata(r.Metadata, opts.Metadata) {
			continue
		}
		out = append(out, *Header(r))
		if opts.Limit > 0 && len(out) >= opts.Limit {
			break
		}
	}
	return out, nil
}

// DeleteThread implements Saver.
func (m *Memory) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateThreadID(threadID); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.threads, threadID)
	m.gcBlobs()
	return nil
}

func (m *Memory) gcBlobs() {
	used := map[string]bool{}
	for _, th := range m.threads {
		for _, cp := range th.cps {
			for _, h := range cp.rec.Refs() {
				used[h] = true
			}
		}
	}
	for h := range m.blobs {
		if !used[h] {
			delete(m.blobs, h)
		}
	}
}

// CopyThread implements Saver.
func (m *Memory) CopyThread(ctx context.Context, src Ref, dst string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateRef(src, false); err != nil {
		return err
	}
	if err := ValidateThreadID(dst); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	th, _, err := m.find(src) // the checkpoint must exist; PlanCopy finds what to keep
	if err != nil {
		return err
	}
	if d := m.threads[dst]; d != nil && len(d.cps) > 0 {
		return fmt.Errorf("%w: %q", ErrThreadExists, dst)
	}
	recs := make([]*Record, len(th.cps))
	for i, cp := range th.cps {
		recs[i] = cp.rec
	}
	keep, err := PlanCopy(recs, src)
	if err != nil {
		return err
	}
	var lease *Lease
	if d := m.threads[dst]; d != nil {
		lease = d.lease
	}
	delete(m.threads, dst)
	nt := m.thread(dst, true)
	nt.lease = lease
	for i, cp := range th.cps {
		if !keep[i] {
			continue
		}
		r := *cp.rec
		r.ThreadID = dst
		raw, err := Encode(&r)
		if err != nil {
			return err
		}
		m.seq++
		ncp := &memCP{seq: m.seq, rec: &r, raw: raw}
		nt.cps = append(nt.cps, ncp)
		key := nsID{r.NS, r.ID}
		nt.byKey[key] = ncp
		if ws := th.writes[key]; ws != nil {
			nt.writes[key] = map[[2]string][]byte{}
			for k, v := range ws {
				nt.writes[key][k] = v
			}
		}
	}
	for ns, msgs := range th.msgs {
		nt.msgs[ns] = map[int64][]byte{}
		for s, data := range msgs {
			nt.msgs[ns][s] = data
		}
		nt.next[ns] = th.next[ns]
	}
	m.gcMessages(nt)
	return nil
}

// gcMessages drops messages no checkpoint of th can reach.
func (m *Memory) gcMessages(th *memThread) {
	need := map[string][]Range{}
	for _, cp := range th.cps {
		r := cp.rec
		need[r.NS] = append(need[r.NS], r.Messages)
		if r.Snapshot != nil {
			need[r.NS] = append(need[r.NS], r.Snapshot.Messages...)
		}
	}
	for ns, msgs := range th.msgs {
		for s := range msgs {
			if !inRanges(need[ns], s) {
				delete(msgs, s)
			}
		}
	}
}

func inRanges(rs []Range, s int64) bool {
	for _, r := range rs {
		if s >= r.From && s < r.To {
			return true
		}
	}
	return false
}

// Prune implements Saver.
func (m *Memory) Prune(ctx context.Context, threadID string, opts PruneOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckPruneOptions(threadID, opts); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	th := m.thread(threadID, false)
	var recs []*Record
	if th != nil {
		for _, cp := range th.cps {
			recs = append(recs, cp.rec)
		}
	}
	plan, err := PlanPrune(ctx, recs, opts)
	if err != nil {
		return fmt.Errorf("prune thread %q: %w", threadID, err)
	}
	if th == nil {
		return nil
	}
	var cps []*memCP
	for i, cp := range th.cps {
		key := nsID{cp.rec.NS, cp.rec.ID}
		if plan.Drop[i] {
			delete(th.byKey, key)
			delete(th.writes, key)
			continue
		}
		if r := plan.Rewrite[i]; r != nil {
			raw, err := Encode(r)
			if err != nil {
				return err
			}
			cp.rec, cp.raw = r, raw
		}
		cps = append(cps, cp)
	}
	th.cps = cps
	m.gcMessages(th)
	m.gcBlobs()
	return nil
}

// Acquire implements Saver.
func (m *Memory) Acquire(ctx context.Context, threadID, holder string, now time.Time, ttl time.Duration) (Lease, error) {
	if err := checkLease(ctx, threadID, holder, ttl); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	th := m.thread(threadID, true)
	if l := th.lease; l != nil && l.Holder != holder && now.Before(l.Expires) {
		return Lease{}, &LeasedError{ThreadID: threadID, Holder: l.Holder, Expires: l.Expires}
	}
	th.lease = &Lease{ThreadID: threadID, Holder: holder, Expires: now.Add(ttl).UTC()}
	return *th.lease, nil
}

// Renew implements Saver.
func (m *Memory) Renew(ctx context.Context, threadID, holder string, now time.Time, ttl time.Duration) (Lease, error) {
	if err := checkLease(ctx, threadID, holder, ttl); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	th := m.thread(threadID, false)
	if th == nil || th.lease == nil || th.lease.Holder != holder {
		return Lease{}, fmt.Errorf("%w: %s does not hold thread %q", ErrNotHeld, holder, threadID)
	}
	th.lease.Expires = now.Add(ttl).UTC()
	return *th.lease, nil
}

// Release implements Saver.
func (m *Memory) Release(ctx context.Context, threadID, holder string) error {
	if err := checkLease(ctx, threadID, holder, time.Second); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if th := m.thread(threadID, false); th != nil && th.lease != nil && th.lease.Holder == holder {
		th.lease = nil
	}
	return nil
}

func checkLease(ctx context.Context, threadID, holder string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateThreadID(threadID); err != nil {
		return err
	}
	if err := ValidateHolder(holder); err != nil {
		return err
	}
	if ttl <= 0 {
		return invalid("lease time %s is not positive", ttl)
	}
	return nil
}

// Threads implements Saver.
func (m *Memory) Threads(ctx context.Context, opts ThreadsOptions) ([]ThreadInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ThreadInfo
	for id, th := range m.threads {
		last := th.latest("")
		if last == nil {
			continue
		}
		info := ThreadInfo{ID: id, Updated: last.rec.Time, Status: last.rec.Status,
			Tokens: last.rec.Usage.InputTokens + last.rec.Usage.OutputTokens}
		for _, cp := range th.cps {
			if cp.rec.NS == "" {
				info.Steps++
				if info.Title == "" {
					info.Title = cp.rec.Title
				}
			}
		}
		out = append(out, info)
	}
	SortThreads(out)
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
}

// SortThreads orders thread listings most recently updated first, then by id.
func SortThreads(ts []ThreadInfo) {
	slices.SortFunc(ts, func(a, b ThreadInfo) int {
		return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(a.ID, b.ID))
	})
}

// Stats implements Saver.
func (m *Memory) Stats(ctx context.Context, threadID string) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var st Stats
	hashes := map[string]bool{}
	for id, th := range m.threads {
		if threadID != "" && id != threadID {
			continue
		}
		for _, cp := range th.cps {
			st.Checkpoints++
			st.Bytes += int64(len(cp.raw))
			for _, h := range cp.rec.Refs() {
				hashes[h] = true
			}
		}
		for _, msgs := range th.msgs {
			for _, d := range msgs {
				st.Messages++
				st.Bytes += int64(len(d))
			}
		}
		for _, ws := range th.writes {
			for _, d := range ws {
				st.Writes++
				st.Bytes += int64(len(d))
			}
		}
	}
	for h := range hashes {
		st.Blobs++
		st.Bytes += int64(len(m.blobs[h]))
	}
	st.Rows = st.Checkpoints + st.Messages + st.Writes + st.Blobs
	return st, nil
}

// Close implements Saver; a closed Memory keeps its data.
func (m *Memory) Close() error { return nil }

var _ Saver = (*Memory)(nil)
