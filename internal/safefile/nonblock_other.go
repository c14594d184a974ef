//go:build !unix

package safefile

const oNonblock = 0
