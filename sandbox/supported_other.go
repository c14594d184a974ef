//go:build !linux

package sandbox

const supported = false
