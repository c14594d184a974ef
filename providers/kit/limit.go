package kit

import (
	"bytes"
	"mime"
	"net/http"
	"sync"

	"github.com/deepagents-go/deepagents/llm"
)

// What the server may send for one attempt is capped in proportion to the
// response's byte limit (llm.ResponseLimits.MaxBytes, from the attempt's
// context; 16 MiB by default), framing included, so that a stream of
// keep-alives or of events an adapter passes over cannot run forever, and
// no piece that an SDK buffers whole can grow without bound. Each cap has a
// floor, so that a small byte limit is not reached on the wire before the
// content reaches it:
const (
	// AnswerFactor caps an answer that is not an event stream (a
	// non-streamed answer, an error body) at 4 times the byte limit, and
	// at least 1 MiB.
	AnswerFactor = 4
	// EventFactor caps one server-sent event at 2 times the byte limit,
	// and at least 1 MiB.
	EventFactor = 2
	// StreamFactor caps an event stream in all at 64 times the byte limit,
	// and at least 64 MiB: a stream spends far more bytes on framing than
	// on content (a few hundred per token), and the content itself is
	// capped by the limit.
	StreamFactor = 64

	pieceFloor  = 1 << 20
	streamFloor = 64 << 20
)

// The Wire values of the errors of those caps.
const (
	wireAnswer = "the answer"
	wireEvent  = "one event of the stream"
	wireStream = "the stream"
)

// capped counts what one response body brings against the wire caps.
type capped struct {
	answer bool  // not an event stream: total at most max
	max    int64 // the cap of the whole body
	event  int64 // the cap of one event (streams)
	read   int64
	ev     eventSize

	mu  sync.Mutex
	err *llm.ResponseTooLargeError
}

// newCapped returns the caps of a response to req, or nil when its byte
// limit is off.
func newCapped(req *http.Request, resp *http.Response) *capped {
	lim := llm.ResponseLimitsFrom(req.Context()).Norm()
	if lim.MaxBytes < 0 {
		return nil
	}
	b := lim.MaxBytes
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		return &capped{max: max(mul(b, StreamFactor), streamFloor), event: max(mul(b, EventFactor), pieceFloor)}
	}
	return &capped{answer: true, max: max(mul(b, AnswerFactor), pieceFloor)}
}

// mul is a*f, or the largest int64 when that overflows.
func mul(a, f int64) int64 {
	if a > (1<<63-1)/f {
		return 1<<63 - 1
	}
	return a * f
}

// add counts p and returns the error of the cap it passes, if any.
func (c *capped) add(p []byte) *llm.ResponseTooLargeError {
	c.read += int64(len(p))
	var err *llm.ResponseTooLargeError
	switch {
	case c.read > c.max && c.answer:
		err = &llm.ResponseTooLargeError{Limit: llm.LimitBytes, Max: c.max, Got: c.read, Wire: wireAnswer}
	case c.read > c.max:
		err = &llm.ResponseTooLargeError{Limit: llm.LimitBytes, Max: c.max, Got: c.read, Wire: wireStream}
	case !c.answer:
		if n := c.ev.feed(p); n > c.event {
			err = &llm.ResponseTooLargeError{Limit: llm.LimitBytes, Max: c.event, Got: n, Wire: wireEvent}
		}
	}
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return err
}

func (c *capped) failed() *llm.ResponseTooLargeError {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// eventSize measures the server-sent event being read: the bytes since the
// last blank line (an event ends at an empty line; lines end with "\n",
// "\r\n" or "\r").
type eventSize struct {
	n       int64 // bytes of the current event, line ends included
	inLine  bool  // the current line has a character
	afterCR bool  // the last byte was "\r", so a "\n" now ends nothing new
}

// feed counts p and returns the largest size the current event reached
// while p was read.
func (e *eventSize) feed(p []byte) int64 {
	largest := e.n
	for len(p) > 0 {
		// The characters of a line up to its end, at once.
		if k := bytes.IndexAny(p, "\r\n"); k != 0 {
			if k < 0 {
				k = len(p)
			}
			e.afterCR = false
			e.inLine = true
			e.n += int64(k)
			largest = max(largest, e.n)
			p = p[k:]
			continue
		}
		// A line end: "\n" or "\r", or the "\n" of a "\r\n".
		c := p[0]
		p = p[1:]
		switch {
		case c == '\n' && e.afterCR:
			// It counts when the line it ends did, and ends nothing more.
			e.afterCR = false
			if e.n == 0 {
				continue
			}
		default:
			e.afterCR = c == '\r'
			if !e.inLine {
				e.n = 0 // a blank line: the event is over
				continue
			}
			e.inLine = false
		}
		e.n++
		largest = max(largest, e.n)
	}
	return largest
}
