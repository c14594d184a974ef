//go:build !unix

package sandbox

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/deepagents-go/deepagents/vfs"
)

func (r *Runner) run(context.Context, string, []string, time.Duration, []*os.File) (vfs.ExecResult, error) {
	return vfs.ExecResult{}, errors.New("running commands is not supported on this system")
}
