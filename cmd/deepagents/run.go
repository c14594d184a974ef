package main

import (
	"context"
	"fmt"
	"io"
)

func cmdRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "deepagents run: not implemented yet; try `deepagents demo`")
	return 2
}
