//go:build unix

package osfs

import "syscall"

// oNonblock keeps opening a FIFO that replaced a regular file from blocking.
const oNonblock = syscall.O_NONBLOCK
