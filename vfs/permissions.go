package vfs

// DeniedError is an operation refused by a rule the user set, such as a
// read-only route of a Composite or a permission rule (package vfs/perm).
// It matches ErrPermission. Reason names the rule in words meant for the
// model, which the file tools pass on.
type DeniedError struct {
	Op     string // "read", "write", "edit", "delete", "list"
	Path   string
	Reason string
}

func (e *DeniedError) Error() string { return e.Op + " " + e.Path + ": " + e.Reason }

// Is reports whether target is ErrPermission.
func (e *DeniedError) Is(target error) bool { return target == ErrPermission }
