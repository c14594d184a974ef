// Package ckerr holds the errors package checkpoint and its internal codecs
// share, so that a codec's error matches checkpoint.ErrInvalid and
// checkpoint.ErrDamaged (which are these values).
package ckerr

import (
	"errors"
	"fmt"
)

// ErrInvalid and ErrDamaged are checkpoint.ErrInvalid and
// checkpoint.ErrDamaged; see their documentation there.
var (
	ErrInvalid = errors.New("invalid checkpoint input")
	ErrDamaged = errors.New("stored thread data is damaged")
)

// damagedError is an error about damaged stored data; it matches
// ErrDamaged.
type damagedError struct{ err error }

func (e *damagedError) Error() string        { return e.err.Error() }
func (e *damagedError) Unwrap() error        { return e.err }
func (e *damagedError) Is(target error) bool { return target == ErrDamaged }

// Damagedf is an error about damaged stored data (see ErrDamaged).
func Damagedf(format string, args ...any) error {
	return &damagedError{err: fmt.Errorf(format, args...)}
}

// Invalidf is an error about input a saver refuses (see ErrInvalid).
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
