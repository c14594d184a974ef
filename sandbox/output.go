package sandbox

import (
	"fmt"
	"strings"
	"sync"
)

// capped keeps the first and the last bytes written to it, up to max in
// all, and counts the rest.
type capped struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte // a ring once full
	next  int    // where the ring writes next
	full  bool
	hcap  int
	tcap  int
	total int64
}

func newCapped(max int) *capped {
	h := max / 2
	return &capped{hcap: h, tcap: max - h}
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.hcap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if c.tcap == 0 {
		return n, nil
	}
	if len(p) >= c.tcap {
		c.tail = append(c.tail[:0], p[len(p)-c.tcap:]...)
		c.next, c.full = 0, true
		return n, nil
	}
	for len(p) > 0 {
		if !c.full {
			k := min(c.tcap-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			if len(c.tail) == c.tcap {
				c.full, c.next = true, 0
			}
			continue
		}
		k := copy(c.tail[c.next:], p)
		p = p[k:]
		c.next = (c.next + k) % c.tcap
	}
	return n, nil
}

// text returns what was kept, with a line in the middle saying how many
// bytes were left out there, and that count. Invalid UTF-8 (including a
// character cut at either edge of the gap) becomes U+FFFD.
func (c *capped) text() (string, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := c.tail
	if c.full {
		tail = append(append([]byte(nil), c.tail[c.next:]...), c.tail[:c.next]...)
	}
	omitted := c.total - int64(len(c.head)) - int64(len(tail))
	if omitted == 0 {
		return strings.ToValidUTF8(string(c.head)+string(tail), "\uFFFD"), 0
	}
	h := strings.ToValidUTF8(string(c.head), "\uFFFD")
	t := strings.ToValidUTF8(string(tail), "\uFFFD")
	sep := "\n"
	if strings.HasSuffix(h, "\n") {
		sep = ""
	}
	return h + sep + fmt.Sprintf("[... %d bytes of output omitted ...]", omitted) + "\n" + t, omitted
}
