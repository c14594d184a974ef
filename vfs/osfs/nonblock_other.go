//go:build !unix

package osfs

const oNonblock = 0
