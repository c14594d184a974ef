package runner

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
)

// hostSpace names where this process's ids mean what they say: the boot of
// the machine (its random boot id) and the process id namespace the process
// lives in. Two processes with the same host name see the same process ids
// only when both are equal; a container that shares its host's name but
// not its process ids, or another machine called "localhost", differs.
// Empty when /proc cannot tell, and then no holder is taken for local.
var hostSpace = sync.OnceValue(func() string {
	boot, err := readSmall("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil {
		return ""
	}
	ns = strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	boot = strings.ReplaceAll(strings.TrimSpace(boot), "-", "")
	if boot == "" || ns == "" || strings.ContainsAny(boot+ns, "/ ") {
		return ""
	}
	return boot + "." + ns
})

// readSmall reads a short /proc file.
func readSmall(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256))
	return string(bytes.TrimSpace(b)), err
}

// hostSpaced is true where processes may share a host name without sharing
// their process ids, so a holder must say which ids it means.
const hostSpaced = true
