package tokens

import (
	"bytes"
	"hash/maphash"
	"sync"

	"github.com/deepagents-go/deepagents/llm"
)

// specMemo remembers a value computed once per tool definition. The same
// definitions go with every model request, so a lookup must cost little:
// it hashes the definition's text where it lies instead of building a key
// from it, and compares the text only on a hit.
type specMemo[V any] struct {
	mu sync.RWMutex
	m  map[uint64][]specEntry[V]
	n  int
}

type specEntry[V any] struct {
	name, desc string
	params     []byte
	v          V
}

// maxSpecMemo bounds the definitions one memo keeps (tools whose text
// changes from request to request, as some MCP servers' do, would
// otherwise grow it without end); past it the memo starts over.
const maxSpecMemo = 4096

var specSeed = maphash.MakeSeed()

func specHash(spec llm.ToolSpec) uint64 {
	h := maphash.String(specSeed, spec.Name)
	h = h*0x9E3779B97F4A7C15 ^ maphash.String(specSeed, spec.Description)
	return h*0x9E3779B97F4A7C15 ^ maphash.Bytes(specSeed, spec.Parameters)
}

func (e *specEntry[V]) is(spec llm.ToolSpec) bool {
	return e.name == spec.Name && e.desc == spec.Description && bytes.Equal(e.params, spec.Parameters)
}

func (m *specMemo[V]) get(spec llm.ToolSpec) (v V, ok bool) {
	h := specHash(spec)
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i := range m.m[h] {
		if e := &m.m[h][i]; e.is(spec) {
			return e.v, true
		}
	}
	return v, false
}

func (m *specMemo[V]) put(spec llm.ToolSpec, v V) {
	h := specHash(spec)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.m[h] {
		if e.is(spec) {
			return
		}
	}
	if m.m == nil || m.n >= maxSpecMemo {
		m.m, m.n = map[uint64][]specEntry[V]{}, 0
	}
	m.m[h] = append(m.m[h], specEntry[V]{name: spec.Name, desc: spec.Description, params: bytes.Clone(spec.Parameters), v: v})
	m.n++
}
