package mcptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// The faults a server can play on the reply to a call of the tool of the
// same name.
const (
	// FaultGarbage replaces the reply with a line that is not JSON.
	FaultGarbage = "garbage"
	// FaultWrongID answers with a request id nobody sent.
	FaultWrongID = "wrong_id"
	// FaultBadShape answers the right id with a result that is not a tool
	// result (its content is a string, not a list).
	FaultBadShape = "bad_shape"
	// FaultHuge answers with a valid reply of HugeReply bytes.
	FaultHuge = "huge"
	// FaultDrop sends no reply: Faults.Drop ends the connection instead.
	FaultDrop = "drop"
)

// FaultKinds lists the faults, each also the name of its tool.
var FaultKinds = []string{FaultGarbage, FaultWrongID, FaultBadShape, FaultHuge, FaultDrop}

// HugeReply is the size of a FaultHuge reply: past the 16 MiB a client
// accepts.
const HugeReply = 16<<20 + 1024

// Faults spoils the reply to a call of a fault tool as it is written. Wrap
// the server's transport writer with Writer; each Write is one message.
type Faults struct {
	// Drop ends the connection in place of the drop tool's reply (a stdio
	// server exits).
	Drop func()

	mu   sync.Mutex
	next string
}

func (f *Faults) arm(kind string) {
	f.mu.Lock()
	f.next = kind
	f.mu.Unlock()
}

// Writer wraps w: the first reply written after a fault tool ran is
// spoiled as that tool says; everything else passes unchanged.
func (f *Faults) Writer(w io.WriteCloser) io.WriteCloser { return &faultWriter{f: f, w: w} }

type faultWriter struct {
	f *Faults
	w io.WriteCloser
}

func (fw *faultWriter) Close() error { return fw.w.Close() }

func (fw *faultWriter) Write(p []byte) (int, error) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(bytes.TrimSpace(p), &msg) != nil || len(msg.ID) == 0 || len(msg.Result) == 0 {
		return fw.w.Write(p)
	}
	fw.f.mu.Lock()
	kind := fw.f.next
	fw.f.next = ""
	fw.f.mu.Unlock()
	out := p
	switch kind {
	case "":
	case FaultDrop:
		if fw.f.Drop != nil {
			fw.f.Drop()
		}
		return 0, io.ErrClosedPipe
	default:
		out = []byte(Spoiled(kind, msg.ID) + "\n")
	}
	if _, err := fw.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Spoiled is the reply a fault puts in place of the answer to request id
// (FaultDrop has none).
func Spoiled(kind string, id json.RawMessage) string {
	switch kind {
	case FaultGarbage:
		return "this is not a JSON-RPC message"
	case FaultWrongID:
		return `{"jsonrpc":"2.0","id":987654321,"result":{"content":[{"type":"text","text":"for someone else"}]}}`
	case FaultBadShape:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":"not a list"}}`, id)
	case FaultHuge:
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
		tail := `"}]}}`
		return head + strings.Repeat("x", HugeReply-len(head)-len(tail)) + tail
	}
	return ""
}
